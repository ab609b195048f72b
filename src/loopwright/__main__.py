"""``python -m loopwright``: the command-line interface."""

from loopwright.cli import main

if __name__ == "__main__":
    main()
