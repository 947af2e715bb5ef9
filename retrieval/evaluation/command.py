"""The `retrieval eval` click command (placeholder until the evaluation runner lands)."""
from __future__ import annotations

import click


@click.command("eval")
@click.argument("dataset")
def eval_command(dataset):
    """Evaluate retrievers on DATASET."""
    raise click.ClickException("not implemented yet")
