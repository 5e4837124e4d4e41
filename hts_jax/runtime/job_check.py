"""Which job a coordinator belongs to, asked before joining it (host side).

JAX's coordination service takes any process that connects to its port as one of its job's: a
second `hts-train --process_id=1` on a running job's `--coordinator_address` makes the service
abort the job's process 0 ("unexpectedly tried to connect with a different incarnation"), and the
run loses everything since its last checkpoint. So process 0 first opens a small check beside the
coordinator, on the next port (`check_address`: port + 1), and keeps it open for the job's life;
every other process asks it before it connects to the coordinator, with the job's token
(`--job_token`: `hts-launch` makes a random one, a SLURM job passes its job id; by default a
digest of what the run computes, its logdir and its process count, the same for every process of
one job). The check answers no, and the newcomer stops in one line without touching the
coordinator, to a process of another job (another token or process count) and to a second
process with an id that has already joined. A process 0 whose check port is taken (another job's
coordinator is there) stops in one line too.
"""

from __future__ import annotations

import errno
import hashlib
import ipaddress
import json
import socket
import threading
import time
from typing import Any, Dict, List, Tuple

from hts_jax.choices import ConfigError

CONNECT_EVERY_S = 0.2
# A connection gets this long to send its one-line request and take the answer; a silent or
# trickling one is closed then. Connections are served side by side, at most MAX_OPEN at once
# (more are closed at once: the newcomer asks again), so idle connections cannot hold the check.
DEADLINE_S = 5.0
MAX_OPEN = 64
MAX_REQUEST = 4096  # bytes: a request is a short JSON line


def check_address(coordinator_address: str) -> Tuple[str, int]:
  """(host, port + 1) of `host:port`."""
  host, _, port = coordinator_address.rpartition(":")
  try:
    return host.strip("[]") or "127.0.0.1", int(port) + 1
  except ValueError:
    raise ConfigError(f"coordinator_address must be host:port, got {coordinator_address!r}"
                      ) from None


def default_token(config_dict: Dict[str, Any], free: frozenset) -> str:
  """The token of a job launched with the same flags everywhere: a digest of what the run
  computes (the fields a resume may not change), its logdir and its process count."""
  kept = {k: v for k, v in config_dict.items() if k not in free or k == "logdir"}
  return hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()[:32]


def _listen(coordinator_address: str, host: str, port: int) -> socket.socket:
  """A socket listening on the coordinator's interface only (`host`, which is process 0's
  machine): the check is reachable where the coordinator is, not on every interface."""
  try:
    family, kind, proto, _, where = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
  except socket.gaierror as e:
    raise ConfigError(f"--coordinator_address={coordinator_address}: host {host!r} cannot be "
                      f"resolved ({e.strerror})") from None
  if ipaddress.ip_address(where[0].split("%")[0]).is_loopback and not _names_loopback(host):
    # A machine's own name that its resolver maps to loopback (Debian's 127.0.1.1 line in
    # /etc/hosts) while the other machines reach it by its real address: every interface then.
    where = ("::" if family == socket.AF_INET6 else "0.0.0.0", port) + tuple(where[2:])
  sock = socket.socket(family, kind, proto)
  try:
    sock.bind(where)
  except OSError as e:
    sock.close()
    if e.errno == errno.EADDRINUSE:
      raise ConfigError(
          f"--coordinator_address={coordinator_address}: port {port} beside it (the job check) "
          f"is in use on this machine ({e.strerror}): another job's coordinator may be there; "
          "choose another port") from None
    raise ConfigError(f"--coordinator_address={coordinator_address}: the job check cannot listen "
                      f"on {host}:{port} ({e.strerror}): process 0 runs on the coordinator's "
                      "host") from None
  sock.listen(MAX_OPEN)
  return sock


def _names_loopback(host: str) -> bool:
  """Whether `host` is a loopback address or `localhost` as written (not a name that resolves
  to one)."""
  try:
    return ipaddress.ip_address(host).is_loopback
  except ValueError:
    return host.lower() in ("localhost", "localhost.localdomain")


class Check(threading.Thread):
  """Process 0's side: answers each newcomer, for as long as the process lives (a daemon)."""

  def __init__(self, coordinator_address: str, token: str, num_processes: int):
    super().__init__(daemon=True, name="job-check")
    self.token, self.num_processes, self.joined = token, num_processes, {0}
    host, port = check_address(coordinator_address)
    self.sock = _listen(coordinator_address, host, port)
    self.address = (host, port)
    self._lock = threading.Condition()
    self._open = 0

  def answer(self, request: Dict[str, Any]) -> Dict[str, Any]:
    if request.get("token") != self.token or request.get("num_processes") != self.num_processes:
      return {"ok": False, "why": "the coordinator there belongs to another job (another "
                                  "--job_token, or other flags)"}
    pid = request.get("process_id")
    if not isinstance(pid, int) or not 0 < pid < self.num_processes:  # a malformed request
      return {"ok": False, "why": f"process_id {pid!r} is not one of the job's others"}
    with self._lock:
      if pid in self.joined:
        return {"ok": False, "why": f"process {pid} of the job there has already joined"}
      self.joined.add(pid)
      self._lock.notify_all()
    return {"ok": True}

  def missing(self, timeout_s: float) -> List[int]:
    """Waits up to `timeout_s` for every process of the job to ask; the ids that did not."""
    deadline = time.monotonic() + timeout_s
    with self._lock:
      while True:
        left = [i for i in range(self.num_processes) if i not in self.joined]
        if not left or time.monotonic() >= deadline:
          return left
        self._lock.wait(deadline - time.monotonic())

  def run(self) -> None:
    while True:
      try:
        conn, _ = self.sock.accept()
      except OSError:
        return
      with self._lock:
        if self._open >= MAX_OPEN:
          conn.close()
          continue
        self._open += 1
      threading.Thread(target=self._serve, args=(conn,), daemon=True, name="job-check-conn"
                       ).start()

  def _serve(self, conn: socket.socket) -> None:
    """One connection, within DEADLINE_S from its accept, whatever pace its bytes come at."""
    deadline = time.monotonic() + DEADLINE_S
    try:
      with conn:
        data = b""
        while b"\n" not in data and len(data) < MAX_REQUEST:
          conn.settimeout(max(deadline - time.monotonic(), 1e-3))
          chunk = conn.recv(MAX_REQUEST)
          if not chunk or time.monotonic() > deadline:
            return
          data += chunk
        request = json.loads(data.split(b"\n")[0] or b"{}")
        if isinstance(request, dict):
          conn.settimeout(max(deadline - time.monotonic(), 1e-3))
          conn.sendall((json.dumps(self.answer(request)) + "\n").encode())
    except (OSError, ValueError):
      pass  # a broken, slow or foreign connection: no answer, nothing joined
    finally:
      with self._lock:
        self._open -= 1


def ask(coordinator_address: str, token: str, process_id: int, num_processes: int,
        timeout_s: float = 120.0) -> None:
  """Another process's side: returns when process 0's check lets it join; ConfigError (one line)
  when it says no or does not answer within `timeout_s`."""
  address = check_address(coordinator_address)
  request = json.dumps({"token": token, "process_id": process_id,
                        "num_processes": num_processes}) + "\n"
  deadline = time.monotonic() + timeout_s
  while True:
    try:
      wait_s = min(DEADLINE_S, max(deadline - time.monotonic(), CONNECT_EVERY_S))
      with socket.create_connection(address, timeout=wait_s) as conn:
        conn.sendall(request.encode())
        reply = json.loads(conn.makefile("r").readline() or "{}")
      break
    except (OSError, ValueError):
      if time.monotonic() > deadline:
        raise ConfigError(
            f"--coordinator_address={coordinator_address}: no job check answered at "
            f"{address[0]}:{address[1]} within {timeout_s:g} s (--join_timeout_s; is process 0 "
            "of this job running?)") from None
      time.sleep(CONNECT_EVERY_S)
  if not reply.get("ok"):
    raise ConfigError(f"--coordinator_address={coordinator_address}: {reply.get('why')}; this "
                      f"process (process_id {process_id}) did not join, the job goes on")
