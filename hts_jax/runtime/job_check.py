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

import hashlib
import json
import socket
import threading
import time
from typing import Any, Dict, Tuple

from hts_jax.validation import ConfigError

CONNECT_EVERY_S = 0.2


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


class Check(threading.Thread):
  """Process 0's side: answers each newcomer, for as long as the process lives (a daemon)."""

  def __init__(self, coordinator_address: str, token: str, num_processes: int):
    super().__init__(daemon=True, name="job-check")
    self.token, self.num_processes, self.joined = token, num_processes, {0}
    host, port = check_address(coordinator_address)
    self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
      self.sock.bind(("", port))
    except OSError as e:
      self.sock.close()
      raise ConfigError(
          f"--coordinator_address={coordinator_address}: port {port} beside it (the job check) "
          f"is in use on this machine ({e.strerror}): another job's coordinator may be there; "
          "choose another port") from None
    self.sock.listen(16)
    self.address = (host, port)

  def answer(self, request: Dict[str, Any]) -> Dict[str, Any]:
    if request.get("token") != self.token or request.get("num_processes") != self.num_processes:
      return {"ok": False, "why": "the coordinator there belongs to another job (another "
                                  "--job_token, or other flags)"}
    pid = request.get("process_id")
    if pid in self.joined:
      return {"ok": False, "why": f"process {pid} of the job there has already joined"}
    self.joined.add(pid)
    return {"ok": True}

  def run(self) -> None:
    while True:
      try:
        conn, _ = self.sock.accept()
      except OSError:
        return
      with conn:
        try:
          conn.settimeout(5.0)
          request = json.loads(conn.makefile("r").readline() or "{}")
          conn.sendall((json.dumps(self.answer(request)) + "\n").encode())
        except (OSError, ValueError):
          pass  # a broken or foreign connection: no answer, nothing joined


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
      with socket.create_connection(address, timeout=5.0) as conn:
        conn.sendall(request.encode())
        reply = json.loads(conn.makefile("r").readline() or "{}")
      break
    except (OSError, ValueError):
      if time.monotonic() > deadline:
        raise ConfigError(
            f"--coordinator_address={coordinator_address}: no job check answered at "
            f"{address[0]}:{address[1]} within {timeout_s:.0f} s (is process 0 of this job "
            "running?)") from None
      time.sleep(CONNECT_EVERY_S)
  if not reply.get("ok"):
    raise ConfigError(f"--coordinator_address={coordinator_address}: {reply.get('why')}; this "
                      f"process (process_id {process_id}) did not join, the job goes on")
