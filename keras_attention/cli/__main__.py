"""`python -m keras_attention.cli`: the `keras-attention` command."""

import sys

from keras_attention.cli import main

sys.exit(main())
