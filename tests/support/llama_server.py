"""llama.cpp's server as a process of its own, for the ``served`` tests: the packaged GGUF
behind ``/v1/embeddings`` on 127.0.0.1, started as ``llama-server`` would be with
``--embeddings --pooling last --alias NAME``.

xllamacpp (the ``embedded`` extra) is llama.cpp's server built as a Python extension: its
``Server`` opens the same HTTP listener as the ``llama-server`` binary, with the same routes
and request handling. Run it in a subprocess so the test talks to it over HTTP as to any
served model::

    python -m tests.support.llama_server MODEL.gguf --alias NAME [--port 0] [--threads N]

prints ``ADDRESS http://127.0.0.1:<port>`` once the model is loaded and serves until it is
terminated (SIGTERM / SIGINT).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("model", help="the GGUF file to serve")
    parser.add_argument("--alias", required=True, help="the model id the server reports")
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ctx-size", type=int, default=4096)
    args = parser.parse_args(argv)

    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}                 # --alias NAME
    params.hostnames = ["127.0.0.1"]                 # --host 127.0.0.1
    params.port = args.port                           # --port N
    params.n_ctx = args.ctx_size                      # --ctx-size N
    params.n_parallel = 1                             # --parallel 1
    params.cpuparams.n_threads = args.threads         # --threads N
    params.cpuparams_batch.n_threads = args.threads
    params.embedding = True                           # --embeddings
    params.pooling_type = xlc.llama_pooling_type.LLAMA_POOLING_TYPE_LAST  # --pooling last
    params.fit_params = False
    params.ui = False
    params.verbosity = 0
    server = xlc.Server(params)
    address = server.listening_address
    print(f"ADDRESS {address}", flush=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    del server
    return 0


if __name__ == "__main__":
    sys.exit(main())
