"""Concurrent API clients against a real farm: create -> render -> poll, plus webhook delivery.

    python -m benchmarks.load --clients 4 --videos-per-client 2

Starts a throwaway PostgreSQL database, a Redis DB of its own (13 by default; refused if it is
not empty), a webhook receiver on 127.0.0.1, `reelfarm serve` (gunicorn, 2 workers) and 2
`reelfarm worker` nodes; every client thread (httpx) creates a story video (6 s), asks for a 720p
render and polls GET /renders/{id} until it has finished. See benchmarks/README.md.

`--client sdk` makes the same rounds through the Python SDK (`client.Client`, with its retries and
typed results) instead of bare httpx; an httpx event hook still records every HTTP attempt, so
latencies and 5xx counts stay those of the wire.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import datetime as dt
import json
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

from benchmarks import farmkit
from benchmarks.rqfarm import RqFarm

API = "/api/v1"
SECONDS = 6
RESOLUTION = 720
TERMINAL = ("succeeded", "failed", "canceled")
DEV_CREDITS = 100           # what `reelfarm serve` gives the dev workspace on first start
KEEP_BODIES = 5             # first 5xx bodies kept per endpoint


# ----------------------------------------------------------------------------- webhook receiver


@dataclass
class Hook:
    at: float                   # time.monotonic() on arrival
    headers: dict[str, str]
    body: bytes
    verified: bool | None = None
    error: str | None = None
    payload: dict[str, Any] | None = None


class Receiver:
    """HTTP server on 127.0.0.1 recording every POST, answering 200; verifies each body with
    `standardwebhooks` once `secret` is known (on arrival, inside the signature's time tolerance)."""

    def __init__(self) -> None:
        self.hooks: list[Hook] = []
        self.secret: str | None = None
        self.lock = threading.Lock()
        me = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                hook = Hook(time.monotonic(), {k.lower(): v for k, v in self.headers.items()}, body)
                me.verify(hook)
                with me.lock:
                    me.hooks.append(hook)
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def verify(self, hook: Hook) -> None:
        from standardwebhooks import Webhook

        if self.secret is None or hook.verified is not None:
            return
        try:
            hook.payload = Webhook(self.secret).verify(hook.body, hook.headers)
            hook.verified = True
        except Exception as e:  # noqa: BLE001 - a failed verification is a finding, not a crash
            hook.verified, hook.error = False, f"{type(e).__name__}: {e}"

    def snapshot(self) -> list[Hook]:
        with self.lock:
            return list(self.hooks)

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


# ----------------------------------------------------------------------------- request figures


@dataclass
class Endpoint:
    latencies: list[float] = field(default_factory=list)
    statuses: collections.Counter[str] = field(default_factory=collections.Counter)
    bodies_5xx: list[str] = field(default_factory=list)
    transport_errors: list[str] = field(default_factory=list)


class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.endpoints: dict[str, Endpoint] = collections.defaultdict(Endpoint)

    def call(self, http: Any, name: str, method: str, url: str, **kw: Any) -> Any:
        """One request; its latency and status are recorded under `name`. None on a transport error."""
        import httpx

        t0 = time.perf_counter()
        try:
            r = http.request(method, url, **kw)
        except httpx.HTTPError as e:
            with self.lock:
                self.endpoints[name].transport_errors.append(f"{type(e).__name__}: {e}"[:300])
            return None
        self.record(name, time.perf_counter() - t0, r)
        return r

    def record(self, name: str, took: float, r: Any) -> None:
        """One answer `r` (an httpx.Response) to a request named `name`, `took` seconds."""
        with self.lock:
            ep = self.endpoints[name]
            ep.latencies.append(took)
            ep.statuses[str(r.status_code)] += 1
            if r.status_code >= 500 and len(ep.bodies_5xx) < KEEP_BODIES:
                ep.bodies_5xx.append(r.text[:500])

    def total(self) -> int:
        return sum(len(e.latencies) + len(e.transport_errors) for e in self.endpoints.values())

    def count_5xx(self) -> int:
        return sum(n for e in self.endpoints.values() for s, n in e.statuses.items() if int(s) >= 500)

    def as_dict(self) -> dict[str, Any]:
        out = {}
        for name, e in sorted(self.endpoints.items()):
            out[name] = {"requests": len(e.latencies) + len(e.transport_errors),
                         "p50_ms": _ms(_pct(e.latencies, 50)), "p99_ms": _ms(_pct(e.latencies, 99)),
                         "max_ms": _ms(max(e.latencies, default=None)), "statuses": dict(e.statuses),
                         "count_5xx": sum(n for s, n in e.statuses.items() if int(s) >= 500),
                         "first_5xx_bodies": e.bodies_5xx, "transport_errors": e.transport_errors[:KEEP_BODIES],
                         "transport_error_count": len(e.transport_errors)}
        return out


def _pct(values: list[float], p: float) -> float | None:
    """Nearest-rank percentile."""
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(-(-len(s) * p // 100)) - 1))]


def _ms(x: float | None) -> float | None:
    return None if x is None else round(x * 1000, 1)


# ----------------------------------------------------------------------------- one client


def client(i: int, args: argparse.Namespace, base: str, key: str, stats: Stats, deadline: float,
           renders: list[dict[str, Any]], lock: threading.Lock) -> None:
    """`args.videos_per_client` create -> render -> poll rounds, each bounded in polls and time,
    all of them by `deadline`."""
    import httpx

    max_polls = int(args.render_timeout / args.poll_interval) + 1
    with httpx.Client(base_url=base, timeout=30, headers={"Authorization": f"Bearer {key}"}) as http:
        for j in range(args.videos_per_client):
            n = i * args.videos_per_client + j
            rec: dict[str, Any] = {"client": i, "n": n, "render_id": None, "status": None}
            try:
                if time.monotonic() > deadline:
                    rec["status"] = "not started: overall deadline passed"
                    continue
                r = stats.call(http, "POST /videos", "POST", f"{API}/videos",
                               json={"storyId": farmkit.STORY, "durationSec": SECONDS, "format": farmkit.FORMAT,
                                     "fields": farmkit.story_fields(n)})
                if r is None or r.status_code != 201:
                    rec["status"] = f"create failed: {r.status_code if r is not None else 'transport error'}"
                    rec["error"] = r.text[:300] if r is not None else None
                    continue
                video = r.json()["id"]
                t0 = time.monotonic()
                r = stats.call(http, "POST /videos/{id}/renders", "POST", f"{API}/videos/{video}/renders",
                               json={"format": farmkit.FORMAT, "resolution": RESOLUTION})
                if r is None or r.status_code != 202:
                    rec["status"] = f"render request failed: {r.status_code if r is not None else 'transport error'}"
                    rec["error"] = r.text[:300] if r is not None else None
                    continue
                rid = rec["render_id"] = r.json()["id"]
                stop_at = min(deadline, t0 + args.render_timeout)
                polls, state = 0, None
                while polls < max_polls and time.monotonic() < stop_at:
                    polls += 1
                    r = stats.call(http, "GET /renders/{id}", "GET", f"{API}/renders/{rid}")
                    if r is not None and r.status_code == 200 and r.json()["status"] in TERMINAL:
                        state = r.json()
                        break
                    time.sleep(args.poll_interval)
                rec.update(polls=polls, seconds=round(time.monotonic() - t0, 3), done_at=time.monotonic())
                if state is None:
                    rec["status"] = "timed out"
                else:
                    rec["status"], rec["error"] = state["status"], state.get("error")
            except Exception as e:  # noqa: BLE001 - one client's surprise must not hang the run
                rec["status"], rec["error"] = "client error", f"{type(e).__name__}: {e}"
            finally:
                with lock:
                    renders.append(rec)


_ID = re.compile(r"/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _recording_http(base: str, key: str, stats: Stats) -> Any:
    """An httpx.Client that records every attempt in `stats`, named like `client`'s requests."""
    import httpx

    def started(request: httpx.Request) -> None:
        request.extensions["t0"] = time.perf_counter()

    def answered(response: httpx.Response) -> None:
        response.read()
        path = _ID.sub("/{id}", response.request.url.path.removeprefix(API))
        stats.record(f"{response.request.method} {path}", time.perf_counter() - response.request.extensions["t0"],
                     response)

    return httpx.Client(base_url=base, timeout=30, headers={"Authorization": f"Bearer {key}"},
                        event_hooks={"request": [started], "response": [answered]})


def sdk_client(i: int, args: argparse.Namespace, base: str, key: str, stats: Stats, deadline: float,
               renders: list[dict[str, Any]], lock: threading.Lock) -> None:
    """`client`'s rounds through the SDK: create, render, poll `renders.get` until finished."""
    from reelfarm.client import Client, ReelfarmError

    with _recording_http(base, key, stats) as http:
        rf = Client(api_key=key, base_url=base, http=http)
        for j in range(args.videos_per_client):
            n = i * args.videos_per_client + j
            rec: dict[str, Any] = {"client": i, "n": n, "render_id": None, "status": None}
            try:
                if time.monotonic() > deadline:
                    rec["status"] = "not started: overall deadline passed"
                    continue
                video = rf.videos.create(story_id=farmkit.STORY, fields=farmkit.story_fields(n),
                                         format=farmkit.FORMAT, duration_sec=SECONDS)
                t0 = time.monotonic()
                render = rf.videos.render(video.id, format=farmkit.FORMAT, resolution=RESOLUTION)
                rec["render_id"], polls = render.id, 0
                stop_at = min(deadline, t0 + args.render_timeout)
                while render.status not in TERMINAL and time.monotonic() < stop_at:
                    time.sleep(args.poll_interval)
                    polls += 1
                    render = rf.renders.get(render.id)
                rec.update(polls=polls, seconds=round(time.monotonic() - t0, 3), done_at=time.monotonic())
                rec["status"], rec["error"] = (render.status, render.error) if render.status in TERMINAL else (
                    "timed out", None)
            except ReelfarmError as e:
                rec["status"], rec["error"] = "request failed", str(e)[:300]
            except Exception as e:  # noqa: BLE001 - one client's surprise must not hang the run
                rec["status"], rec["error"] = "client error", f"{type(e).__name__}: {e}"
            finally:
                with lock:
                    renders.append(rec)


# ----------------------------------------------------------------------------- webhooks


def wait_for_webhooks(receiver: Receiver, expected: set[str], wait: float, settle: float) -> float | None:
    """Until a verified render.completed has arrived for every `expected` render (at most `wait`
    seconds), then `settle` seconds more to catch late duplicates. Returns the seconds waited until
    the last one arrived, None if some never came."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < wait:
        got = {_render_id(h) for h in receiver.snapshot() if h.verified}
        if expected <= got:
            arrived = time.monotonic() - t0
            time.sleep(settle)
            return arrived
        time.sleep(0.2)
    return None


def _render_id(h: Hook) -> str | None:
    try:
        return h.payload["data"]["render"]["id"] if h.payload else None  # type: ignore[index]
    except (KeyError, TypeError):
        return None


def webhook_report(receiver: Receiver, renders: list[dict[str, Any]], waited: float | None) -> dict[str, Any]:
    hooks = receiver.snapshot()
    for h in hooks:
        receiver.verify(h)  # any that came before the secret was known
    succeeded = {r["render_id"]: r for r in renders if r["status"] == "succeeded"}
    completed = [h for h in hooks if h.verified and h.payload and h.payload.get("type") == "render.completed"]
    per_event = collections.Counter(h.headers.get("webhook-id") for h in hooks)
    events_per_render: dict[str, set[str]] = collections.defaultdict(set)
    for h in completed:
        events_per_render[_render_id(h) or "?"].add(h.headers.get("webhook-id", "?"))
    body_id_mismatch = [h.headers.get("webhook-id") for h in completed
                        if (h.payload or {}).get("id") != h.headers.get("webhook-id")]
    missing = sorted(set(succeeded) - set(events_per_render))
    unexpected = sorted(set(events_per_render) - set(succeeded))
    duplicates = {k: n for k, n in per_event.items() if n > 1}
    multi = {r: sorted(ids) for r, ids in events_per_render.items() if len(ids) > 1}
    after = [h.at - succeeded[_render_id(h)]["done_at"] for h in completed if _render_id(h) in succeeded]
    failed_verify = [h.error for h in hooks if not h.verified]
    ok = bool(succeeded) and not (missing or unexpected or duplicates or multi or failed_verify or body_id_mismatch)
    return {"received": len(hooks), "verified": sum(1 for h in hooks if h.verified),
            "verification_failures": failed_verify[:KEEP_BODIES], "render_completed": len(completed),
            "distinct_event_ids": len(per_event), "expected_renders": len(succeeded),
            "missing_renders": missing, "unexpected_renders": unexpected,
            "duplicate_event_ids": duplicates, "renders_with_several_events": multi,
            "body_id_differs_from_webhook_id": body_id_mismatch,
            "seconds_until_last_arrived": None if waited is None else round(waited, 2),
            "arrival_after_client_saw_succeeded_s": {"p50": _round(_pct(after, 50)), "max": _round(max(after, default=None))},
            "exactly_once": ok}


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 2)


# ----------------------------------------------------------------------------- the run


def run(args: argparse.Namespace, work: Path, notes: list[str]) -> dict[str, Any]:
    import httpx

    from reelfarm.farm.runtime.wiring import make_redis

    redis_url = f"redis://127.0.0.1:6379/{args.redis_db}"
    probe = make_redis(redis_url)
    try:
        found = probe.dbsize()
    finally:
        probe.close()
    if found and not args.flush_nonempty:
        raise SystemExit(f"{redis_url} holds {found} keys: someone else's? choose another --redis-db "
                         "(or --flush-nonempty if they are a dead run's)")
    result: dict[str, Any] = {"client": args.client, "clients": args.clients, "videos_per_client": args.videos_per_client,
                              "story": farmkit.STORY, "duration_sec": SECONDS, "format": farmkit.FORMAT,
                              "resolution": RESOLUTION, "poll_interval_s": args.poll_interval,
                              "server": "reelfarm serve (gunicorn, 2 workers x 4 threads)",
                              "nodes": args.nodes}
    with contextlib.ExitStack() as stack:
        receiver = stack.enter_context(Receiver())
        pg = stack.enter_context(farmkit.PostgresDB())
        redis_db = stack.enter_context(farmkit.RedisDB(redis_url))
        result.update(database=f"PostgreSQL {pg.version}, throwaway database {pg.name}",
                      redis=f"Redis {redis_db.version}, {redis_url} (flushed at start and end)")
        port = farmkit.free_port()
        data_dir = work / "data"
        env = {"REELFARM_DATABASE_URL": pg.url, "REELFARM_REDIS_URL": redis_url,
               "REELFARM_STORAGE_URL": f"file://{data_dir / 'files'}",
               "REELFARM_SECRET_KEY": secrets.token_urlsafe(48), "REELFARM_FETCH_ALLOW_PRIVATE": "1"}
        server, key = farmkit.start_server(data_dir, port, env)
        stack.callback(server.stop)
        # the nodes get what the server has (start_server adds DATA_DIR, PUBLIC_URL, RATE_LIMIT_PRO)
        nodes = RqFarm(seconds=SECONDS, resolution=RESOLUTION, redis_url=redis_url)
        nodes.env = {**env, "REELFARM_DATA_DIR": str(data_dir), "REELFARM_PUBLIC_URL": f"http://127.0.0.1:{port}",
                     "REELFARM_RATE_LIMIT_PRO": "1000000"}
        nodes.redis = redis_db.redis
        stack.callback(nodes.stop_workers)
        nodes.start_workers(args.nodes)
        print(f"  server on :{port}, {args.nodes} nodes idle, receiver at {receiver.url}")

        base = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=base, timeout=30, headers={"Authorization": f"Bearer {key}"}) as http:
            hook = http.post(f"{API}/webhooks", json={"url": receiver.url, "events": ["render.completed"]})
            if hook.status_code != 201:
                raise RuntimeError(f"POST /webhooks answered {hook.status_code}: {hook.text[:300]}")
            receiver.secret = hook.json()["secret"]
            result["webhook_id"] = hook.json()["id"]
            need = args.clients * args.videos_per_client
            if need > DEV_CREDITS:  # one credit per render of a <= 60 s video
                ws = http.get(f"{API}/me").json()["workspace"]["id"]
                subprocess.run([sys.executable, "-m", "reelfarm", "admin", "add-credits", ws, str(need)],
                               cwd=farmkit.ROOT, env=farmkit.clean_env(**nodes.env), check=True,
                               capture_output=True, timeout=60)

        stats, lock = Stats(), threading.Lock()
        renders: list[dict[str, Any]] = []
        deadline = time.monotonic() + args.deadline
        rounds = sdk_client if args.client == "sdk" else client
        threads = [threading.Thread(target=rounds, args=(i, args, base, key, stats, deadline, renders, lock),
                                    daemon=True, name=f"client-{i}") for i in range(args.clients)]
        with farmkit.FarmWitness(lambda: [server.pid] + nodes.roots()) as cpu:
            t0 = time.monotonic()
            for t in threads:
                t.start()
            for t in threads:  # each stops by itself by `deadline`; the margin covers one last request
                t.join(timeout=max(0.0, deadline - time.monotonic()) + 60)
            wall = time.monotonic() - t0
        stuck = [t.name for t in threads if t.is_alive()]
        if stuck:
            notes.append(f"clients still running after the deadline: {stuck}")
        farmkit.flag_load("load", cpu, notes)

        expected = {r["render_id"] for r in renders if r["status"] == "succeeded"}
        print(f"  {len(renders)} rounds in {wall:.1f} s; waiting up to {args.webhook_wait:g} s for webhooks ...")
        waited = wait_for_webhooks(receiver, expected, args.webhook_wait, args.webhook_settle)
        hooks = webhook_report(receiver, renders, waited)

        statuses = collections.Counter(r["status"] for r in renders)
        total = stats.total()
        result.update(
            seconds=round(wall, 3), requests=total, requests_per_second=round(total / wall, 2),
            endpoints=stats.as_dict(), count_5xx=stats.count_5xx(),
            renders={"planned": need, "by_status": dict(statuses),
                     "all_succeeded": statuses.get("succeeded", 0) == need,
                     "seconds_request_to_done": {"p50": _round(_pct([r["seconds"] for r in renders if "seconds" in r], 50)),
                                                 "max": _round(max((r["seconds"] for r in renders if "seconds" in r),
                                                                   default=None))},
                     "rounds": [{k: v for k, v in r.items() if k != "done_at"} for r in sorted(renders, key=lambda r: r["n"])]},
            webhooks=hooks, cpu=cpu.as_dict())
        if result["count_5xx"] or not result["renders"]["all_succeeded"]:
            result["server_tail"] = server.tail(60)
            result["node_tails"] = {w.name: w.tail(30) for w in nodes.workers}
    return result


def print_result(res: dict[str, Any], notes: list[str]) -> None:
    rows = [[name, str(e["requests"]), f"{e['p50_ms']}", f"{e['p99_ms']}", str(e["count_5xx"]),
             " ".join(f"{s}x{n}" for s, n in sorted(e["statuses"].items()))]
            for name, e in res["endpoints"].items()]
    w = res["webhooks"]
    farmkit.print_table(
        f"load: {res['clients']} clients x {res['videos_per_client']} videos, {res['duration_sec']} s "
        f"{res['resolution']}p, {res['requests']} requests in {res['seconds']:.1f} s = {res['requests_per_second']} req/s",
        ["endpoint", "requests", "p50 ms", "p99 ms", "5xx", "statuses"], rows,
        [f"renders: {res['renders']['by_status']} (all succeeded: {res['renders']['all_succeeded']})",
         f"5xx: {res['count_5xx']}",
         (f"webhooks: {w['render_completed']} render.completed verified for {w['expected_renders']} renders, "
         f"{w['distinct_event_ids']} event ids, duplicates {len(w['duplicate_event_ids'])}, missing "
         f"{len(w['missing_renders'])}: exactly once: {w['exactly_once']}")] + notes)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.load", description=__doc__.split("\n")[0])
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--client", choices=("http", "sdk"), default="http",
                   help="bare httpx requests, or the Python SDK (client.Client)")
    p.add_argument("--videos-per-client", type=int, default=2)
    p.add_argument("--nodes", type=int, default=2, help="`reelfarm worker` processes (default 2)")
    p.add_argument("--poll-interval", type=float, default=0.25, help="seconds between GET /renders/{id}")
    p.add_argument("--render-timeout", type=float, default=300.0, help="per render, request to done")
    p.add_argument("--deadline", type=float, default=900.0, help="for all clients together")
    p.add_argument("--webhook-wait", type=float, default=60.0, help="after the last render")
    p.add_argument("--webhook-settle", type=float, default=6.0,
                   help="extra wait once all arrived, for late duplicates (dispatcher ticks every 5 s)")
    p.add_argument("--redis-db", type=int, default=13)
    p.add_argument("--flush-nonempty", action="store_true", help="flush --redis-db even if it holds keys")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = p.parse_args(argv)
    if args.clients < 1 or args.videos_per_client < 1 or args.nodes < 1 or args.poll_interval <= 0:
        p.error("--clients, --videos-per-client and --nodes must be >= 1, --poll-interval > 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    info = farmkit.machine()
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%dT%H%M%S")
    notes: list[str] = []
    work = Path(tempfile.mkdtemp(prefix="reelfarm-bench-load-"))
    status = 0
    try:
        res = run(args, work, notes)
    except Exception as e:  # noqa: BLE001 - record it
        import traceback

        traceback.print_exc()
        res, status = {"error": f"{type(e).__name__}: {e}"}, 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if "error" not in res:
        print_result(res, notes)
        if res["count_5xx"] or not res["renders"]["all_succeeded"] or not res["webhooks"]["exactly_once"]:
            status = 1
    path = args.out / f"load-{stamp}.json"
    path.write_text(json.dumps({"benchmark": "load", "machine": info, "notes": notes, "result": res,
                                "created": dt.datetime.now().isoformat(timespec="seconds")}, indent=2, default=str))
    print(f"  -> {path}")
    return status


if __name__ == "__main__":
    sys.exit(main())
