"""`python -m trainer` (and `torchrun ... -m trainer`): the `train-rl` command line."""

from trainer.cli import main

if __name__ == "__main__":
    main()
