"""An S3-compatible server for tests: moto's `ThreadedMotoServer` on loopback (a real S3 HTTP API,
reached through s3fs as a bucket elsewhere would be), stopped on exit.

Without moto or s3fs the tests skip, except under CI=true, where that is a failure (the `test`
extra that setup.sh installs has both).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator

import pytest

BUCKET = "rsi-test"
# What s3fs (botocore) reads to reach the server; fake keys, as the server accepts any.
ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


def require_s3() -> None:
    try:
        import moto.server  # noqa: F401
        import s3fs  # noqa: F401
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail("moto[server] or s3fs is missing under CI=true (./setup.sh installs the test extra)")
        pytest.skip("no moto[server] or s3fs here: pip install 'rsi-master[test]'")


@contextlib.contextmanager
def server() -> Iterator[str]:
    """A moto S3 server on a free loopback port; yields its endpoint URL."""
    require_s3()
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    s = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    s.start()
    try:
        host, port = s.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        s.stop()
