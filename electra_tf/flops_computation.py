"""Prints the original's FLOPs table (`flops_computation.py`) for its model sizes.

python -m electra_tf.flops_computation
"""

import argparse
import sys

from electra_tf.utils.flops import MODEL_FLOPS


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.parse_args(argv)
  for name, flops in MODEL_FLOPS.items():
    print(name, flops)
  return 0


if __name__ == "__main__":
  sys.exit(main())
