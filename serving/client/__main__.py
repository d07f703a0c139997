"""`python -m keras_attention_client translate ...`: the `keras-attention-client` command."""

import sys

from keras_attention_client.cli import main

if __name__ == "__main__":
    sys.exit(main())
