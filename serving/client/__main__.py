"""`python -m serving.client translate ...`: the `keras-attention-client` command."""

import sys

from serving.client.cli import main

if __name__ == "__main__":
    sys.exit(main())
