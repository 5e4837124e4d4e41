"""The GALA agents' meeting points (`gala.py`): the gossip ring's mailboxes (the paper's receive
buffers, appendix B) and the rounds in which the main thread takes the agents' iterations."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

from hts_jax import gala
from hts_jax.runtime import supervisor
from hts_jax.runtime.buffers import Done
from hts_jax.runtime.learner_worker import LearnResult

MAX_LEAD = 16  # iterations an agent may run ahead of the slowest one (holds their params)


class Ring:
  """The agents' gossip mailboxes (the paper's receive buffers, appendix B): `send(i, k, params)`
  never waits; `receive(i, k)` gives (k', params, time sent) sent by i's in-peer at its
  iteration k', or None (nothing new: the agent does not gossip this iteration, Eq. 5).

  async: one slot per receiver, a newer message overwrites an unread one. fixed: the in-peer's
  message of iteration k - staleness exactly, waited for (None before iteration `staleness`)."""

  def __init__(self, n: int, gossip: str, staleness: int = 1):
    self.n, self.gossip, self.staleness = n, gossip, staleness
    self._cond = threading.Condition()
    self._latest: List[Optional[Tuple[int, Any, float]]] = [None] * n
    self._box: List[Dict[int, Tuple[Any, float]]] = [{} for _ in range(n)]
    self.closed = False
    self.sent = 0
    self.overwritten = 0  # async: messages replaced before their receiver read them

  def send(self, i: int, k: int, params) -> None:
    j = gala.out_peer(i, self.n)
    with self._cond:
      if self.gossip == "async":
        self.overwritten += self._latest[j] is not None
        self._latest[j] = (k, params, time.perf_counter())
      else:
        self._box[j][k] = (params, time.perf_counter())
      self.sent += 1
      self._cond.notify_all()

  def receive(self, i: int, k: int,
              check: Callable[[], None] = lambda: None) -> Optional[Tuple[int, Any, float]]:
    """`check()` is called while waiting (raises to abandon the wait)."""
    with self._cond:
      if self.gossip == "async":
        msg, self._latest[i] = self._latest[i], None
        return msg
      want = k - self.staleness
      if want < 0:
        return None
      while want not in self._box[i]:
        if self.closed:
          return None
        self._cond.wait(supervisor.POLL_S)
        check()
      return (want,) + self._box[i].pop(want)

  def close(self) -> None:
    with self._cond:
      self.closed = True
      self._cond.notify_all()


class Step(NamedTuple):
  """One agent's iteration as the main thread sees it."""
  params: Any                  # after the iteration (gala: mixed)
  result: Optional[LearnResult]  # gala: the agent's update; allreduce: None (the main thread's)
  reports: List[Done]
  staleness: Optional[int]     # gala: iterations between the mixed-in message and now
  age_s: Optional[float]       # gala: seconds between its sending and its mixing
  rollout_s: float


class Rounds:
  """Round k: every agent's k-th `Step`. Agents `put` (waiting while more than `lead` rounds
  ahead of the oldest one not taken); the main thread `take`s complete rounds in order."""

  def __init__(self, n: int, first: int = 0, lead: int = MAX_LEAD):
    self.n, self.lead = n, lead
    self.next = first
    self._rounds: Dict[int, Dict[int, Step]] = {}
    self._cond = threading.Condition()
    self.closed = False

  def put(self, i: int, k: int, step: Step) -> bool:
    with self._cond:
      while k >= self.next + self.lead and not self.closed:
        self._cond.wait()
      self._rounds.setdefault(k, {})[i] = step
      self._cond.notify_all()
      return not self.closed

  def complete(self, k: int) -> bool:
    return len(self._rounds.get(k, ())) == self.n

  def wait(self, k: int, timeout: float) -> bool:
    """Waits up to `timeout` s for round k to complete (woken by the agents' `put`)."""
    with self._cond:
      if not self.complete(k):
        self._cond.wait(timeout)
      return self.complete(k)

  def take(self, k: int) -> List[Step]:
    with self._cond:
      steps = self._rounds.pop(k)
      self.next = k + 1
      self._cond.notify_all()
    return [steps[i] for i in range(self.n)]

  def close(self) -> None:
    with self._cond:
      self.closed = True
      self._cond.notify_all()
