"""``python -m mutation [LAB ...] [--jobs N] [--force] [--findings FILE]``: the
analysis of each lab (every lab by default), from its cache unless something it
depends on changed; the contract pages' counts updated; exit 1 when a mutant is
not explained by the lab's allow-list (docs/labs/mutants/<lab>.yaml)."""
from __future__ import annotations

import argparse
import sys
import time

from autograder.labs import all_labs
from mutation.analysis import (
    CATEGORIES,
    allow_list,
    contract_section,
    counts,
    entry_for,
    one_line,
    problems,
    prune,
    results,
    stale_entries,
    update_contract_page,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mutation", description=__doc__)
    parser.add_argument("labs", nargs="*", help="lab ids (default: every lab)")
    parser.add_argument("--jobs", type=int, default=2, help="mutants run at once (default 2)")
    parser.add_argument(
        "--force", action="store_true", help="compute again even when the cache is current"
    )
    parser.add_argument(
        "--findings", help="also write the hidden-only and neither mutants to this Markdown file"
    )
    parser.add_argument(
        "--prune",
        action="store_true",
        help="drop the allow-list entries whose mutant the checks now catch",
    )
    args = parser.parse_args(argv)
    labs = all_labs()
    unknown = [lab for lab in args.labs if lab not in labs]
    if unknown:
        print(f"no lab {', '.join(unknown)}; the labs are {', '.join(labs)}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    wrong, findings = [], ["# Mutants the checks miss", ""]
    print(
        f"{'lab':16} {'mutants':>8} "
        + " ".join(f"{c:>11}" for c in CATEGORIES)
        + "  seconds (processor)"
    )
    for lab_id in args.labs or list(labs):
        lab = labs[lab_id]
        found = results(
            lab,
            jobs=args.jobs,
            force=args.force,
            progress=lambda line: print(line, file=sys.stderr),
        )
        allowed = allow_list(lab_id)
        stale = stale_entries(found, allowed)
        if stale and args.prune:
            prune(lab_id, stale)
            allowed = allow_list(lab_id)
        elif stale:
            print(
                f"{lab_id}: allow-list entries no longer needed (--prune drops them): "
                f"{', '.join(stale)}",
                file=sys.stderr,
            )
        update_contract_page(lab_id, contract_section(found, allowed))
        total = counts(found)["all"]
        print(
            f"{lab_id:16} {sum(total.values()):>8} "
            + " ".join(f"{total[c]:>11}" for c in CATEGORIES)
            + f"  {found['seconds']:>7} ({found.get('cpu_seconds', '?')})"
        )
        wrong += problems(found, allowed)
        findings += _findings(found, allowed)
    print(f"({time.perf_counter() - started:.0f} s)")
    if args.findings:
        with open(args.findings, "w", encoding="utf-8") as out:
            out.write("\n".join(findings) + "\n")
    for line in wrong:
        print(line, file=sys.stderr)
    return 1 if wrong else 0


def _findings(found: dict, allowed: dict) -> list[str]:
    lines = [f"## {found['lab']}", ""]
    for category, kind in (("hidden-only", "hidden_by_design"), ("neither", "equivalent")):
        records = [r for r in found["mutants"] if r["category"] == category]
        lines.append(f"### {category}: {len(records)}")
        lines.append("")
        for r in records:
            reason = (entry_for(r, allowed[kind] + allowed["open"]) or {}).get("reason", "")
            lines.append(
                f"- `{r['id']}` **{', '.join(r['parts'])}** ({r['function']}, {r['operator']}, "
                f"line {r['line']}): "
                f"`{one_line(r['before'])}` → `{one_line(r['after'])}`"
                + (f" — hidden tests: {r['hidden']}" if r["hidden"] else "")
                + (f" — allowed: {reason}" if reason else "")
            )
        lines.append("")
    return lines


if __name__ == "__main__":
    sys.exit(main())
