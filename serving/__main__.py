"""`python -m keras_attention.serving`: run the local model server with tensorflow_model_server's flags."""

import sys

from keras_attention.serving.server.cli import main

if __name__ == "__main__":
    sys.exit(main())
