"""A local S3-compatible server for tests and benchmarks: moto's standalone server, in its own process, on loopback.

    python -m devnet.s3server [--host 127.0.0.1] [--port 0]

prints "PORT <n>" once it listens and stops when its stdin closes.

`LocalS3Server` starts it on a free port (the port is chosen by the kernel and read back, never guessed), gives the
AWS environment that points boto3 at it, and stops it. The server is moto (`moto[server]`, a dev dependency): a
real HTTP S3 API (SigV4, multipart, ranged GETs), objects held in memory. It runs in a process of its own so it
does not share the caller's GIL, and stops when its parent goes away (its stdin closes), so a killed test leaves
nothing behind. docs/storage.md has its measured speed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from types import TracebackType
from typing import Any

from protocol.errors import GradledgerError

KEY_BUFFER_BYTES = 1 << 32
"""moto spools each object to a temporary file past 5 MiB by default; keeping objects in memory up to 4 GiB halves
its time per 100 MB PUT. The server holds only what a test or a bench puts."""
TEST_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "gradledger-test", "AWS_SECRET_ACCESS_KEY": "gradledger-test-secret"}
START_TIMEOUT_S = 60.0


class S3ServerError(GradledgerError):
    """The local S3 server could not be started."""


class LocalS3Server:
    """moto's S3 server on 127.0.0.1 in a child process; use as a context manager."""

    def __init__(self, region: str = "us-east-1", host: str = "127.0.0.1", wrapper: tuple[str, ...] = ()) -> None:
        """`host`: the address to listen on; `wrapper`: a command prefix the server runs under (e.g. `ip netns exec
        NS`, to put it on another host of devnet/hosts.py)."""
        self.region = region
        self.host = host
        self.wrapper = wrapper
        self.process: subprocess.Popen[str] | None = None
        self.port = 0

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def env(self) -> dict[str, str]:
        """The AWS environment variables that point boto3 (and node processes) at this server."""
        return {**TEST_CREDENTIALS, "AWS_ENDPOINT_URL": self.endpoint_url, "AWS_REGION": self.region}

    def start(self) -> LocalS3Server:
        env = {**os.environ, "MOTO_S3_DEFAULT_KEY_BUFFER_SIZE": str(KEY_BUFFER_BYTES)}
        self.process = subprocess.Popen(
            [*self.wrapper, sys.executable, "-m", "devnet.s3server", "--host", self.host, "--port", "0"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
        )  # fmt: skip
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # blocks until the server listens (or exits)
        if not line.startswith("PORT "):
            self.stop()
            raise S3ServerError(
                "the local S3 server (moto) did not start; install the dev dependencies (`make setup`, moto[server])"
            )
        self.port = int(line.split()[1])
        return self

    def make_client(self) -> Any:
        """A boto3 S3 client for this server (tests use it to create buckets and to corrupt objects directly)."""
        import boto3

        return boto3.client(
            "s3", endpoint_url=self.endpoint_url, region_name=self.region,
            aws_access_key_id=TEST_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=TEST_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        )  # fmt: skip

    def create_bucket(self, name: str) -> None:
        self.make_client().create_bucket(Bucket=name)

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()  # the server exits when its stdin closes
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()

    def __enter__(self) -> LocalS3Server:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=0, help="port (0: a free one, printed)")
    args = parser.parse_args(argv)
    os.environ.setdefault("MOTO_S3_DEFAULT_KEY_BUFFER_SIZE", str(KEY_BUFFER_BYTES))
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no access log line per request
    server = ThreadedMotoServer(ip_address=args.host, port=args.port, verbose=False)
    server.start()
    print(f"PORT {server.get_host_and_port()[1]}", flush=True)
    try:
        sys.stdin.read()  # until the parent closes our stdin (or dies)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
