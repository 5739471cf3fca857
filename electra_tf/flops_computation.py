"""Prints the original's FLOPs table (`flops_computation.py`) for its model sizes.

python -m electra_tf.flops_computation
"""

from electra_tf.utils.flops import MODEL_FLOPS


def main():
  for name, flops in MODEL_FLOPS.items():
    print(name, flops)


if __name__ == "__main__":
  main()
