"""`python -m retrieval`: the `retrieval` command, for an environment whose scripts are not on PATH."""
from .entry import main

main()
