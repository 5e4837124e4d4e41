"""The alpha barrier (paper Section 4.1, Fig. 2(d)): the GO/Done protocol between the controller
and the executors, in one place.

  controller ── go(segment) ──▶ executor k  (action buffer: GO, segment)
       ▲                          │ steps alpha steps per env in storage filling(segment), its
       │                          │ blocks released by `post_blocks` as actions are written
       └──── Done(k, segment) ◀───┘ (control channel), then waits for the next GO

Every executor has one action buffer (its inbox: GO, SAVE, STOP and block ids) and one control
channel (owned by the supervisor, whose waits check liveness). The barrier is where the loop
becomes deterministic: nothing between two `go`s depends on timing, and `wait_done` refuses a
report of any other segment than the one expected.
"""

from __future__ import annotations

import signal
from typing import Dict, List, Optional, Sequence

from hts_jax.runtime import buffers
from hts_jax.runtime.buffers import ActionBuffer, ActionWriter, Done, EnvStates, Started
from hts_jax.runtime.errors import Interrupted
from hts_jax.runtime.supervisor import Supervisor


class AlphaBarrier:
  """The executors' side of the loop as the controller and the actors see it: `inboxes[k]` is
  executor k's action buffer; `supervisor` delivers their control messages."""

  def __init__(self, supervisor: Supervisor, inboxes: Sequence[ActionBuffer] = ()):
    self.supervisor = supervisor
    self.inboxes: List[ActionBuffer] = list(inboxes)

  def attach(self, inboxes: Sequence[ActionBuffer]) -> None:
    """The executors' action buffers (once, when they are spawned or started)."""
    self.inboxes = list(inboxes)

  @property
  def writers(self) -> List[ActionWriter]:
    """The actors' ends of the action buffers (to `post_blocks` on), by executor."""
    return [ib.writer for ib in self.inboxes]

  def _executors(self, executors: Optional[Sequence[int]]) -> Sequence[int]:
    return range(len(self.inboxes)) if executors is None else executors

  def wait_started(self, executors: Optional[Sequence[int]] = None) -> None:
    """Waits until the executors have created their envs; a signal meanwhile stops the run with
    `Interrupted` (nothing was trained, nothing is saved)."""
    sup = self.supervisor
    for k in self._executors(executors):
      while not sup.ctrl[k].reader.poll(0.0):
        if sup.signal is not None:
          raise Interrupted(f"interrupted by {signal.Signals(sup.signal).name} during start-up; "
                            "nothing was trained or saved", sup.signal)
        sup.wait(lambda k=k: sup.ctrl[k].reader.poll(0.0) or sup.signal is not None)
      sup.wait_message(k, Started)

  def go(self, segment: int, executors: Optional[Sequence[int]] = None) -> None:
    """Leaves the barrier: the executors start `segment` in storage `filling(segment)`."""
    for k in self._executors(executors):
      self.supervisor.watch(k)
      self.inboxes[k].writer.post(buffers.GO, segment)

  def wait_done(self, segment: int, executors: Optional[Sequence[int]] = None) -> List[Done]:
    """The barrier: every executor (of `executors`) has finished `segment`; their reports in
    executor order. A report of another segment is a broken protocol (RuntimeError)."""
    reports = self.supervisor.wait_all(Done, executors)
    for r in reports:
      if r.segment != segment:
        raise RuntimeError(f"executor {r.executor} reported segment {r.segment}, not {segment}")
    return reports

  def collect_env_states(self) -> Optional[Dict[int, bytes]]:
    """Every env's pickled state (for a checkpoint; the executors are at the barrier), or None
    if some env cannot be pickled (a resume then re-creates the envs)."""
    for inbox in self.inboxes:
      inbox.writer.post(buffers.SAVE)
    env_states: Optional[Dict[int, bytes]] = {}
    for msg in self.supervisor.wait_all(EnvStates):
      if msg.states is None or env_states is None:
        env_states = None
      else:
        env_states.update(msg.states)
    return env_states
