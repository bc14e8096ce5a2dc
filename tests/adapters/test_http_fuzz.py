"""Every HTTP service fuzzed over its OpenAPI surface and attacked, as real processes, while `/health` is watched.

Issue 18's acceptance test: a solver (`solver run`), a verifier (`verifier serve`, a juror), a whistleblower
(`whistleblower watch`) and a run creator's artifact server (`artifacts serve`) run as separate processes on a real
anvil, with a created run (the solver has trained and serves its commitment document). Each service's own
`/openapi.json` drives a hypothesis fuzzer over every path and method it declares, with path parameters and
bodies drawn from their schemas (and from the run's real hashes and ids, so the fuzzer also reaches handlers past
validation). Then the hostile requests found in the field go to every service at once: 100,000-deep JSON (by
length and chunked), 100 MB bodies streamed (by length and chunked, a JSON string among them), a client trickling
its body or its request head a byte a second, and hundreds of concurrent connections. Meanwhile a separate
process polls every service's `/health` with a 1 s timeout (the issue's bound), so a stall of any event loop
shows; the poller is a process of its own so this test's fuzzing cannot delay it. At the end every service must
still be alive, and not one poll may have failed, except while an idle control server beside them answered late
too (the whole machine stalled: a loaded CI host, not a stalled event loop).

Hypothesis is used instead of schemathesis (no new dependency): the surface is small (GETs with path parameters
and one JSON POST), and the strategies below cover its schemas.
"""

from __future__ import annotations

import json
import select
import socket
import string
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.adapters.keys import get_devnet_account
from tests.adapters.test_http_guard import assert_eventually_closed, send_streamed, status_of
from tests.chain_fixtures import DEVNET_NODE_FLAGS, free_port, prepare_run, start_node, stop, wait_until
from tests.forked_nodes import start_gradledger

pytestmark = pytest.mark.e2e

SOLVER, VERIFIER, WHISTLEBLOWER = 17, 18, 19
MAX_ERROR_BYTES = 2048

POLLER = """
import json, sys, threading, time, httpx
control, urls, done, report, slow_control = sys.argv[1], sys.argv[2:], threading.Event(), {}, []
def poll(url):
    polls, failures, slowest = 0, [], 0.0
    with httpx.Client(timeout=1.0) as client:  # the issue's bound: /health answers within 1 s
        while not done.is_set():
            started = time.monotonic()
            try:
                status = client.get(url + "/health").status_code
                slowest = max(slowest, time.monotonic() - started)
                if status != 200:
                    failures.append((started, f"status {status}"))
            except httpx.HTTPError as exc:
                failures.append((started, repr(exc)))
            polls += 1
            done.wait(0.1)
    report[url] = {"polls": polls, "failures": failures, "slowest_s": round(slowest, 3)}
def poll_control():
    # an idle server on this machine: when even it answers late, the machine stalled, not the service
    with httpx.Client(timeout=1.0) as client:
        while not done.is_set():
            started = time.monotonic()
            try:
                client.get(control)
                if time.monotonic() - started > 0.5:
                    slow_control.append((started, time.monotonic()))
            except httpx.HTTPError:
                slow_control.append((started, time.monotonic()))
            done.wait(0.1)
threads = [threading.Thread(target=poll, args=(u,)) for u in urls] + [threading.Thread(target=poll_control)]
for t in threads:
    t.start()
print("polling", flush=True)
sys.stdin.read()
done.set()
for t in threads:
    t.join()
for result in report.values():
    stalled = [f for f in result["failures"] if any(a - 1.5 <= f[0] <= b + 0.5 for a, b in slow_control)]
    result["machine_stalls"] = len(stalled)
    result["failures"] = [why for f in result["failures"] if f not in stalled for why in [f[1]]][:20]
print(json.dumps(report), flush=True)
"""


@dataclass
class Service:
    name: str
    url: str
    process: subprocess.Popen


@pytest.fixture(scope="module")
def services(deployment, corpus, tmp_path_factory) -> Iterator[dict]:
    """The four services as processes, a run created and the solver's round-0 commitment document served."""
    home = tmp_path_factory.mktemp("fuzz") / "home"
    setup = prepare_run(deployment, corpus, home, [SOLVER], [VERIFIER])
    rpc = setup.protocol.chain.rpc_url
    processes = {
        "solver": start_node(setup, "solver", SOLVER),
        "verifier": start_node(setup, "verifier", VERIFIER),
    }
    ports = {"solver": setup.ports[SOLVER], "verifier": setup.ports[VERIFIER]}
    ports["whistleblower"], ports["artifacts"] = free_port(), free_port()
    commands = {
        "whistleblower": ["whistleblower", "watch", "--run", str(setup.run_id), "--devnet-account",
                          str(WHISTLEBLOWER), "--home", str(home), "--rpc-url", rpc, *DEVNET_NODE_FLAGS],
        "artifacts": ["artifacts", "serve", str(home / "creator" / "artifacts")],
    }  # fmt: skip
    for name, args in commands.items():
        processes[name] = start_gradledger([*args, "--port", str(ports[name])], home / f"{name}.log")  # type: ignore[assignment]
    try:
        for name, port in ports.items():
            wait_until(lambda p=port: healthy(p), 180, f"the {name} to answer /health")
        setup.create(wait_for_nodes=False)
        solver = get_devnet_account(SOLVER).address
        wait_until(lambda: committed(setup), 300, "the solver's round-0 commitment")
        hashes = [f"0x{p.name}" for p in (home / "creator" / "artifacts").rglob("*") if len(p.name) == 64]
        known = {
            "run_id": [setup.run_id], "round_index": [0], "digest": hashes,
            "identifier": [f"{setup.run_id}:0:{solver}:0"], "dispute_id": ["0x" + "ab" * 32],
        }  # fmt: skip
        yield {
            "services": {n: Service(n, f"http://127.0.0.1:{ports[n]}", p) for n, p in processes.items()},
            "known": known,
            "home": home,
        }
    finally:
        for process in processes.values():
            stop(process)


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def committed(setup) -> bool:
    events = setup.protocol.chain.get_events(setup.protocol.chain.manifest.deployed_block, names=["Committed"])
    return any(e.args.get("runId") == setup.run_id for e in events)


@contextmanager
def health_watch(services: dict[str, Service]) -> Iterator[None]:
    """Poll every service's /health from another process while the block runs; fail on any slow or bad answer."""
    urls = [s.url for s in services.values()]
    # The control: an idle HTTP server process beside the services. A poll that fails while the control, too, took over
    # 0.5 s is the machine stalling every process (a loaded CI host), not the service's event loop, and is not counted.
    control_port = free_port()
    control = subprocess.Popen(
        [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(control_port)],
        cwd=tempfile.mkdtemp(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        control_url = f"http://127.0.0.1:{control_port}/"
        wait_until(lambda: _answers(control_url), 60, "the control HTTP server")
        poller = subprocess.Popen(
            [sys.executable, "-c", POLLER, control_url, *urls], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert poller.stdout.readline().strip() == "polling"
        try:
            yield
        finally:
            out, _ = poller.communicate("", timeout=60)
    finally:
        stop(control)
    report = json.loads(out.strip().splitlines()[-1])
    for service in services.values():
        result = report[service.url]
        assert not result["failures"], f"{service.name}: /health failed or took over 1 s: {result}"
        counted = result["polls"] - result["machine_stalls"]
        assert counted >= 5, f"{service.name}: /health was polled {counted} times outside machine stalls only"
    for service in services.values():
        assert service.process.poll() is None, f"the {service.name} died (exit code {service.process.returncode})"


# -- the fuzzer --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    params: tuple[tuple[str, str], ...]  # (name, JSON-schema type) of each path parameter
    has_body: bool


def get_operations(url: str) -> list[Operation]:
    """Every (path, method) the service's own OpenAPI document declares."""
    schema = httpx.get(f"{url}/openapi.json", timeout=30).json()
    operations = []
    for path, methods in schema["paths"].items():
        for method, spec in methods.items():
            params = tuple(
                (p["name"], p.get("schema", {}).get("type", "string"))
                for p in spec.get("parameters", [])
                if p["in"] == "path"
            )
            operations.append(Operation(method.upper(), path, params, "requestBody" in spec))
    return operations


LONG_TEXT = st.text(alphabet=string.ascii_letters + string.digits + " -_.", min_size=120, max_size=3000)
"""Long inputs that no error body may echo: plain characters, so an echo reads the same in JSON, repr or raw."""
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40) | LONG_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=20), inner, max_size=4),
    max_leaves=20,
)
HEX = st.text(alphabet="0123456789abcdefABCDEF", min_size=0, max_size=200).map(lambda s: "0x" + s)
VOTES = st.fixed_dictionaries(
    {
        "dispute_id": HEX | st.text(max_size=80),
        "seat": st.integers() | st.text(max_size=20),
        "juror": HEX | st.text(max_size=50),
        "challenger_wins": st.booleans() | st.integers() | st.none(),
        "signature": HEX | LONG_TEXT,
    }
)


PLAIN = set(string.ascii_letters + string.digits + " -_.")


def param_values(name: str, kind: str, known: dict) -> st.SearchStrategy:
    drawn = st.integers() if kind == "integer" else st.text(min_size=1, max_size=80) | HEX
    return st.sampled_from(known[name]) if known.get(name) else drawn | LONG_TEXT


@st.composite
def requests(draw, operations: list[Operation], known: dict) -> tuple[Operation, str, bytes | None, list[str]]:
    """(operation, path, body, the long strings it carries that no error body may echo)."""
    op = draw(st.sampled_from(operations))
    path, strings = op.path, []
    for name, kind in op.params:
        value = draw(param_values(name, kind, known) | param_values(name, kind, {}))
        strings.append(str(value))
        path = path.replace("{" + name + "}", quote(str(value), safe=""))
    body = None
    if op.has_body or draw(st.integers(0, 9)) == 0:
        payload = draw(VOTES | JSON_VALUES | st.binary(max_size=5000))
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        strings += collect_strings(payload)
    return op, path, body, [s for s in strings if len(s) >= 100 and set(s) <= PLAIN]


def collect_strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, bytes):
        return [value.decode("latin-1")]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in collect_strings(k) + collect_strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in collect_strings(v)]
    return []


def check_response(service: Service, op: Operation, path: str, response: httpx.Response, strings: list[str]) -> None:
    where = f"{service.name} {op.method} {path[:120]} -> {response.status_code}"
    assert response.status_code < 500, f"{where}: {response.text[:300]}"
    if response.status_code >= 400:
        assert len(response.content) <= MAX_ERROR_BYTES, f"{where}: a {len(response.content)}-byte error body"
        for text in strings:
            assert text[:100] not in response.text, f"{where}: the error body echoes the input"


def fuzz(service: Service, known: dict, examples: int) -> int:
    """About `examples` hostile requests, spread over every operation: each operation gets its own share, so none
    is left out by chance (drawing the operation as well once left one unsent in 80 draws)."""
    operations = get_operations(service.url)
    assert operations, f"{service.name} declares no operation"
    sent = []
    for operation in operations:

        @settings(
            max_examples=max(examples // len(operations), 5), deadline=None, database=None,
            suppress_health_check=list(HealthCheck),
        )  # fmt: skip
        @given(requests([operation], known))
        def one_request(request) -> None:
            op, path, body, strings = request
            headers = {"content-type": "application/json"} if body is not None else {}
            with httpx.Client(base_url=service.url, timeout=30) as client:
                response = client.request(op.method, path, content=body, headers=headers)
            check_response(service, op, path, response, strings)
            sent.append(op)

        one_request()
    return len({(op.method, op.path) for op in sent})


def test_the_openapi_surface_of_every_service_is_fuzzed_without_a_stall(services):
    with health_watch(services["services"]), ThreadPoolExecutor(4) as pool:
        covered = {
            name: pool.submit(fuzz, service, services["known"], 80) for name, service in services["services"].items()
        }
        covered = {name: future.result() for name, future in covered.items()}
    for name, service in services["services"].items():
        assert covered[name] == len(get_operations(service.url)), f"{name}: not every operation was fuzzed"
    assert "/jury/votes" in {op.path for op in get_operations(services["services"]["verifier"].url)}


# -- the hostile requests ----------------------------------------------------------------------------------------


def body_path(service: Service) -> str:
    """The route that takes a body (the verifier's vote exchange), else any route: the guard comes first."""
    return "/jury/votes" if service.name == "verifier" else "/identity"


def attack_sizes_and_depths(service: Service) -> None:
    path, json_headers = body_path(service), {"content-type": "application/json"}
    deep = httpx.post(service.url + path, content=b"[" * 100_000, headers=json_headers, timeout=30)
    assert deep.status_code == 413 and len(deep.content) <= MAX_ERROR_BYTES, (service.name, deep.status_code)
    shallow_but_deep = httpx.post(service.url + path, content=b"[" * 3000, headers=json_headers, timeout=30)
    assert shallow_but_deep.status_code == 400, (service.name, shallow_but_deep.status_code)
    for chunk, by_length in ((b"[" * 65_536, False), (b"\0" * 65_536, True), (b'"' + b"a" * 65_535, True),
                             (b'"' + b"a" * 65_535, False)):  # fmt: skip
        response, sent = send_streamed(service.url, path, 100_000_000, chunk, content_length=by_length)
        assert status_of(response) == 413, (service.name, response[:200])
        assert sent < 10_000_000, f"{service.name} read {sent} bytes of a 100 MB body before refusing it"
        assert len(response) <= MAX_ERROR_BYTES and b"aaaa" not in response


def attack_slowly(service: Service, head: bool) -> None:
    """A client sending a byte a second, of its body or of its request head: answered 408 or cut off."""
    parts = urlsplit(service.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=60) as sock:
        start = f"POST {body_path(service)} HTTP/1.1\r\nHost: x\r\n"
        sock.sendall((start + "X-Slow: " if head else start + "Content-Length: 1000\r\n\r\n").encode())
        for _ in range(60):  # the deadline is 10 s: the server answers or closes long before 60 bytes
            if select.select([sock], [], [], 1.0)[0]:
                break
            sock.sendall(b"a" if head else b"[")
        else:
            raise AssertionError(f"{service.name} waited a minute for a slow {'head' if head else 'body'}")
        if not head:
            assert status_of(sock.recv(65536)) == 408
        assert_eventually_closed(sock)


def attack_with_connections(service: Service, count: int = 300) -> None:
    """Hundreds of connections held open (idle or mid-head) while real requests still get answers."""
    parts = urlsplit(service.url)
    held = []
    try:
        for index in range(count):
            sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
            if index % 2:
                sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
            held.append(sock)
        with httpx.Client(base_url=service.url, timeout=30) as client, ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(lambda _: client.get("/openapi.json").status_code, range(64)))
        assert set(answers) <= {200, 503}, (service.name, answers)
        assert 200 in answers, f"{service.name} answered nothing while connections were held"
    finally:
        for sock in held:
            sock.close()


def test_hostile_requests_to_every_service_leave_it_alive_and_health_answering(services):
    attacks = [attack_sizes_and_depths, attack_with_connections,
               lambda s: attack_slowly(s, head=False), lambda s: attack_slowly(s, head=True)]  # fmt: skip
    with health_watch(services["services"]), ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(a, s) for s in services["services"].values() for a in attacks]
        failed = [f.exception() for f in futures if f.exception() is not None]  # raised once /health is judged
    if failed:
        raise failed[0]
    for service in services["services"].values():
        assert httpx.get(f"{service.url}/health", timeout=10).status_code == 200


def test_every_service_logs_what_it_refused(services):
    """A refused request is logged (http_guard), so an operator sees an attack in the node's log."""
    logs = {"solver": f"solver-{SOLVER}.log", "verifier": f"verifier-{VERIFIER}.log"}
    for name, service in services["services"].items():
        oversized = httpx.post(f"{service.url}/identity", content=b"[" * 100_000, timeout=30)
        assert oversized.status_code == 413
        log = Path(services["home"]) / logs.get(name, f"{name}.log")
        wait_until(lambda log=log: "request refused" in log.read_text(errors="replace"), 30, f"the {name}'s log")
