"""The counts of issue 15's closing note, measured: ``python -m tests.faults.report`` (a few
minutes: every fault scenario runs the real CLI in a subprocess).

- inputs tried / clear errors / judged / crashes: the adversarial corpus through
  ``judge.judge_file`` and through ``python -m judge run`` (a crash: a line whose outcome is not
  its expected one or whose error is not a clear one-line reason, an exception out of the batch,
  a traceback, or a resume that does not complete);
- faults tried / fail-closed: the fault matrix (:mod:`tests.faults.harness`);
- kill -9 resumes / lost / duplicated;
- self-grading names tried / refused (and other families judged).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from tests.faults.adversarial import CASES, CORPUS
from tests.faults.harness import (
    failed_closed,
    judge_cmd,
    kill_and_resume,
    launch_all,
    recovered,
    run_scenarios,
    write_config,
)
from tests.faults.selfgrade_names import ALLOWED, REFUSED
from tests.support.openai_server import OpenAIServer


def clear(error: str | None) -> bool:
    return bool(error) and "Traceback" not in (error or "") and "\n" not in (error or "") \
        and len(error or "") < 700


def inputs(work: Path) -> dict[str, int]:
    from judge.api import judge_file
    from judge.config import JudgeConfig

    counts = {"tried": len(CASES), "clear_errors": 0, "judged_or_refused": 0, "crashes": 0}
    with OpenAIServer() as server:
        config = JudgeConfig(model="openai/fake-judge", api_base=server.base_url,
                             strategy="batch", retries=1, backoff_s=0.01, timeout_s=10)
        try:
            results = judge_file(CORPUS, config=config, db=work / "inputs.db")
            resumed = judge_file(CORPUS, config=config, db=work / "inputs.db")
        except Exception as exc:  # the whole batch crashed
            print(f"batch crashed: {type(exc).__name__}: {exc}", file=sys.stderr)
            counts["crashes"] = len(CASES)
            return counts
        for (name, _, expect), result in zip(CASES, results, strict=True):
            if expect.startswith("rejected:") and result.status == "rejected" \
                    and clear(result.error) \
                    and expect.removeprefix("rejected:").lower() in (result.error or "").lower():
                counts["clear_errors"] += 1
            elif expect == result.status and result.status in ("judged", "refused"):
                counts["judged_or_refused"] += 1
            else:
                counts["crashes"] += 1
                print(f"unexpected outcome of {name}: {result}", file=sys.stderr)
        if resumed.summary.model_calls or [r.status for r in resumed] != [r.status for r in
                                                                        results]:
            counts["crashes"] += 1
            print("the resume did not complete from the store", file=sys.stderr)
        write_config(work / "judge.toml", server.base_url)
        (cli,) = launch_all([(judge_cmd("run", str(CORPUS), "--db", "cli.db", "-c",
                                        "judge.toml", "--json"), work)])
        if "Traceback" in cli.stderr or cli.returncode not in (2, 3):
            counts["crashes"] += 1
            print(f"the CLI failed: {cli.returncode} {cli.stderr[-500:]}", file=sys.stderr)
    return counts


def faults(work: Path) -> dict[str, object]:
    outcomes = run_scenarios(work)
    closed = [o.scenario.name for o in outcomes if not failed_closed(o) and not recovered(o)]
    failing = {o.scenario.name: failed_closed(o) + recovered(o) for o in outcomes
               if o.scenario.name not in closed}
    return {"tried": len(outcomes), "fail_closed": len(closed), "failing": failing,
            "attempts_per_faulty_call": {o.scenario.name: o.scenario.attempts
                                         for o in outcomes}}


def kills(work: Path) -> dict[str, int]:
    report = kill_and_resume(work, 24, targets=(2, 6, 11, 15, 20))
    return {"kills": report.kills, "resumes": report.resumes, "lost": report.lost,
            "duplicated": report.duplicated, "final_exit_code": report.final_code}


def selfgrading() -> dict[str, int]:
    from judge.models.identity import self_grading_reason

    return {"tried": len(REFUSED), "refused": sum(bool(self_grading_reason(g, j))
                                                  for g, j in REFUSED),
            "other_families_tried": len(ALLOWED),
            "other_families_judged": sum(self_grading_reason(g, j) is None
                                         for g, j in ALLOWED)}


def main() -> int:
    os.environ.setdefault("OPENAI_API_KEY", "sk-test")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "inputs").mkdir()
        (base / "kills").mkdir()
        report = {"inputs": inputs(base / "inputs"), "faults": faults(base / "faults"),
                  "kill_9": kills(base / "kills"), "self_grading": selfgrading()}
    print(json.dumps(report, indent=2, ensure_ascii=False))
    i, f, k, s = (report[key] for key in ("inputs", "faults", "kill_9", "self_grading"))
    print(f"inputs tried {i['tried']} / clear errors {i['clear_errors']} / judged or refused "
          f"{i['judged_or_refused']} / crashes {i['crashes']}")
    print(f"faults tried {f['tried']} / fail-closed {f['fail_closed']}")
    print(f"kill -9 resumes {k['resumes']} / lost {k['lost']} / duplicated {k['duplicated']}")
    print(f"self-grading names tried {s['tried']} / refused {s['refused']} (other families "
          f"{s['other_families_tried']} / judged {s['other_families_judged']})")
    ok = (not i["crashes"] and f["tried"] == f["fail_closed"] and not k["lost"]
          and not k["duplicated"] and s["tried"] == s["refused"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
