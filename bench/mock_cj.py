"""The shared peer mock (``shared/bench/peers/mock_server.py``) with this repo's
``bench/responder_cj.py`` installed, which answers verify_claims v1 and v2.

    python bench/mock_cj.py --peers ../shared/bench/peers --port 8765 --log /tmp/mock.jsonl

Every other argument goes to mock_server.py; the peers' requests are answered by the shared
responder unchanged.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __name__ == "__main__":
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--peers", required=True)
    known, rest = parser.parse_known_args()
    sys.path[:0] = [str(Path(__file__).resolve().parent), known.peers]
    import responder_cj  # bench/responder_cj.py (this repo's copy)

    responder_cj.install()
    import mock_server

    sys.argv = [sys.argv[0], *rest]
    mock_server.main()
