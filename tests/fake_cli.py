"""Run the real ``judge`` CLI in a subprocess with the scripted fake provider installed
(tests only): ``python -m tests.fake_cli run in.jsonl --db x.db --model fake/judge``."""

from __future__ import annotations

import os
import sys

from tests.fakes import FakeLLM, install

install(FakeLLM(latency_s=float(os.environ.get("FAKE_LATENCY", "0"))))

from judge.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.argv = ["judge", *sys.argv[1:]]
    main()
