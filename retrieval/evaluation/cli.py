"""The `retrieval eval` command: run a dataset against retrievers and print the numbers."""
from __future__ import annotations

import click

from ..options import RootPath


def _retriever_names(choice: str) -> tuple[list[str], dict[str, str]]:
    """Names to run and {name: reason} for those skipped. Unknown names are a usage error."""
    from ..retrievers.base import REGISTRY, get_spec, unknown_retriever
    from ..service import available_retrievers

    if choice == "all":
        pairs = available_retrievers()
        usable = [n for n, reason in pairs if not reason]
        if len(usable) > 1:  # and what `query --retriever all` serves: their hits consolidated
            pairs = pairs + [("all", "")]
    else:
        pairs = []
        names = list(dict.fromkeys(n.strip() for n in choice.split(",") if n.strip()))  # once each
        if not names:
            raise click.UsageError("--retriever names no retriever")
        if "all" in names:  # it was "unknown retriever 'all'", the name the help offers
            raise click.UsageError("--retriever: 'all' (every installed retriever) stands alone; "
                                   "or list the names to run")
        for name in names:
            if name not in REGISTRY:  # `all` is among the choices, on its own
                raise click.UsageError(str(unknown_retriever(name, "all")))
            pairs.append((name, get_spec(name).unavailable_reason()))
    return [n for n, reason in pairs if not reason], {n: reason for n, reason in pairs if reason}


@click.command("eval", short_help="Score retrievers on a dataset of queries.")
@click.argument("dataset", type=click.Path(allow_dash=True))  # missing or a directory: one error line, exit 1 (as for --root)
@click.option("--root", type=RootPath(), default=None, metavar="DIR",
              help="The tree the dataset's paths are relative to. Default: found as for `query`.")
@click.option("--retriever", "retriever_name", default="all", show_default=True, metavar="NAME[,NAME...]",
              help="A retriever name, a comma list, or 'all' for every installed one but lexical+ctx (and, "
                   "with two or more, their consolidated ranking as `query --retriever all` gives it, in a row "
                   "named all).")
@click.option("-k", "--top-k", "k", type=click.IntRange(min=1), default=10, show_default=True, metavar="N",
              help="Cut-off of the ranked list that is scored.")
@click.option("--metrics", default="auto", show_default=True, metavar="auto|FAMILY[,FAMILY...]",
              help="Metric families, comma separated: ndcg (span NDCG/recall/MRR), files (Acc@1/3/5, "
                   "file MRR), map (MAP, P@30). auto: ndcg, plus map for prose datasets.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object with all numbers.")
@click.option("--per-query", is_flag=True, help="Include a row per query.")
@click.option("--force", is_flag=True, help="Rebuild the index first (and report the build time).")
@click.option("--profile", type=click.Choice(["code", "prose"]), default=None,
              help="Index with this profile first (see `retrieval index --profile`); default: as indexed.")
def eval_command(dataset, root, retriever_name, k, metrics, as_json, per_query, force, profile):
    """Evaluate retrievers on DATASET (semble JSON annotations or JSONL; - reads standard input) over
    the repository (--root)."""
    from ..cli import UserError, _expected_errors, _fail, _json, _progress_sink, _root
    from .datasets import DatasetError, load_dataset
    from .report import evaluation_text
    from .runner import evaluate

    names, skipped = _retriever_names(retriever_name)
    root = _root(root, builds=True)
    try:  # a bad dataset is the one error line, before any note on skipped retrievers
        queries = load_dataset(dataset)
    except DatasetError as exc:
        raise _fail(exc)

    def note_skipped():
        from ..retrievers.base import get_spec, not_installed

        # Those whose extras are missing in one line with one command, as `index` says them (four
        # lines here said the torch command twice); any other reason (a model gone) on its own.
        uninstalled = [name for name in skipped if get_spec(name).missing()]
        for name, reason in skipped.items():
            if name not in uninstalled:
                click.echo(f"skipped {name}: {reason}", err=True)
            elif name == uninstalled[0]:
                click.echo(not_installed(uninstalled), err=True)

    if not names:
        if len(skipped) == 1:  # the one asked for: its reason is the error, as `query` gives it
            raise UserError(next(iter(skipped.values())))
        note_skipped()
        raise UserError("none of the retrievers asked for can run here")
    families = () if metrics == "auto" else tuple(f.strip() for f in metrics.split(",") if f.strip())
    if metrics != "auto" and not families:  # `--metrics "$UNSET"` was taken for auto without a word
        raise click.BadParameter("names no metric family (an unset variable?): give ndcg, files or map, "
                                 "or leave the option out", param_hint="'--metrics'")
    try:
        from .runner import choose_metrics

        choose_metrics(queries, families)
    except ValueError as exc:  # a bad option value, as click says it (exit 2)
        raise click.BadParameter(str(exc), param_hint="'--metrics'")
    try:
        result = evaluate(root, queries, names, k, metrics=families, force=force, profile=profile,
                          progress=_progress_sink(always=False))
    except (DatasetError,) + _expected_errors() as exc:
        raise _fail(exc)  # the one error line, without notes of retrievers that were not going to run
    skipped.update(result.skipped)  # and those that failed to run here
    note_skipped()
    result.skipped.update(skipped)
    if not result.runs:  # each one asked for failed to start (its model gone): an empty table passed CI
        raise UserError("none of the retrievers asked for could run here")
    if as_json:
        # _json: a root named in bytes that are not UTF-8 made the output invalid UTF-8 (or a traceback)
        click.echo(_json(result.to_json(per_query)))
    else:
        click.echo(evaluation_text(result, per_query))
    if result.runs and all(run.summary()["queries"] == 0 for run in result.runs):
        # Nothing was measured (a dataset for another checkout, a wrong --root): the report stands,
        # but a CI step comparing retrievers must not pass on it.
        from ..output import shown_path

        raise UserError(f"no query could be scored: none of the {len(queries)} queries has a target in the tree "
                        f"at {shown_path(root)}; is --root the dataset's tree?")
