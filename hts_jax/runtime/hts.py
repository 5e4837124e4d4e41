"""The HTS-RL loop (paper Section 4.1, Fig. 1(e), Fig. 2(d)).

  executors (processes) ──ready (segment, [(env, t)])──▶ actor threads (jitted keyed policy step)
        ▲                                                      │ actions into storage[t, env]
        └──────────────── inbox [env ids] ◀────────────────────┘
  storage A (being filled by executors)   storage B (being learned by the learner thread)

The controller (the calling thread) swaps the storages when the executors have finished `alpha`
steps per env *and* the learner has finished its update, so the behaviour policy is exactly one
update behind the learner's target (lag 1; 0 for the very first segment, collected by θ_0 while
the learner idles). Segment k is collected by θ_{max(k-1, 0)} and learned with the delayed
gradient at θ_{k-1} applied to θ_k.

Determinism: env ids are global; env seeds and action keys derive from (seed, env_id, step);
transitions are written at [t, row] (row = env_id * agents + agent); each actor batch runs on a fixed
[rows, ...] shape with every row at its own position; the learner consumes whole storages. Timing decides nothing.
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing as mp
import os
import signal
import queue
import threading
import time
from typing import Any, Dict, List, Optional

import jax
import jax.numpy as jnp
import numpy as np

from hts_jax import acting, envs, learner, networks, seeding
from hts_jax.config import ConfigError, RunConfig
from hts_jax.runtime import checkpoint, reporting
from hts_jax.runtime.evaluation import Evaluator
from hts_jax.runtime.executor import ExecutorSpec, executor_main
from hts_jax.runtime.storage import Storages, StorageSpec
from hts_jax.types import Segment

_POLL_S = 0.05


class RunError(RuntimeError):
  """A run stopped by a failing part (executor, actor, learner); the message is one line."""


class Interrupted(RuntimeError):
  """SIGINT/SIGTERM: the run checkpointed at a segment boundary and stopped cleanly."""

  def __init__(self, message: str, signum: int):
    super().__init__(message)
    self.signum = signum


class HTSRunner:
  """Builds the parts for `config`, runs them, writes `<logdir>/{metrics.csv,summary.json}`.

  With `resume=True` it continues from the newest checkpoint in `<logdir>/checkpoints`; without,
  it refuses a logdir that holds one (nothing saved is ever overwritten).
  """

  def __init__(self, config: RunConfig, resume: bool = False):
    self.config = config
    self.info = envs.env_info(config.env, config.env_kwargs)
    kind = config.network
    if kind == "auto":
      kind = networks.default_network_for(self.info.obs_shape)
    self.network = networks.make_network(kind, self.info.num_actions)
    self.network_kind = kind
    lcfg = config.learner
    if config.mode != "hts":  # the baselines have no delayed gradient
      lcfg = dataclasses.replace(lcfg, correction="none")
    self.optimizer = learner.make_optimizer(lcfg)
    key = jax.random.PRNGKey(seeding.learner_seed(config.seed))
    init_key, state_key = jax.random.split(key)
    dummy = jnp.zeros((1,) + self.info.obs_shape, self.info.obs_dtype)
    params = self.network.init(init_key, dummy)
    self.state = learner.init_train_state(params, self.optimizer, state_key)
    self.restored = self._restore() if resume else None
    if not resume and checkpoint.latest_step(config.logdir) is not None:
      raise ConfigError(f"{checkpoint.directory(config.logdir)} holds a checkpoint: pass --resume "
                        "to continue that run, or choose another --logdir")
    self.learner_step = self._make_learner_step(lcfg, kind)
    self.num_agents = self.info.num_agents
    self.num_rows = config.num_envs * self.num_agents  # storage rows: env_id * agents + agent
    self.policy = acting.make_policy_step(
        self.network.apply, self.num_rows,
        devices=_local_devices(config.actor_devices, "actor_devices"))
    self.streams = seeding.action_streams(config.seed, self.num_rows)
    self.compile_s = self._compile()

  def _make_learner_step(self, lcfg, kind):
    return learner.make_learner_step(
        lcfg, self.network.apply, self.optimizer, unroll=learner.unroll_for(kind),
        devices=_local_devices(self.config.learner_devices, "learner_devices"))

  def _restore(self):
    cfg = self.config
    if checkpoint.latest_step(cfg.logdir) is None:
      raise ConfigError(f"--resume: no checkpoint in {checkpoint.directory(cfg.logdir)}")
    ckpt = checkpoint.restore(cfg.logdir, self.state)
    saved_cfg = ckpt["host"]["config"]
    changed = checkpoint.incompatible_changes(saved_cfg, json.loads(json.dumps(cfg.to_dict())))
    if changed:
      k = sorted(changed)[0]
      raise ConfigError(f"--resume: {k} differs from the checkpoint ({changed[k][0]!r} there, "
                        f"{changed[k][1]!r} now)")
    if ckpt["host"]["segment"] + 1 > cfg.num_segments:
      raise ConfigError(f"--resume: the checkpoint is at segment {ckpt['host']['segment']}, "
                        f"beyond --total_steps={cfg.total_steps}")
    self.state = ckpt["state"]
    return ckpt

  def _compile(self) -> float:
    """Compiles the learner and policy steps before the clock starts (results discarded)."""
    t0 = time.perf_counter()
    cfg, info = self.config, self.info
    a, n = cfg.alpha, self.num_rows
    zeros = Segment(obs=np.zeros((a + 1, n) + info.obs_shape, info.obs_dtype),
                    actions=np.zeros((a, n), np.int32), rewards=np.zeros((a, n), np.float32),
                    dones=np.zeros((a, n), np.float32))
    jax.block_until_ready(self.learner_step(self.state, self._learner_input(zeros)))
    self._act(self.state.params, zeros.obs[0], np.zeros((n, 2), np.uint32))
    return time.perf_counter() - t0

  def _act(self, params, obs, seeds):
    """The policy step this runner's actors run (compiled before the clock): actions only."""
    return self.policy.run_actions(params, obs, seeds)

  def _learner_input(self, segment: Segment):
    return segment

  # ---------------------------------------------------------------- run
  def run(self) -> Dict[str, Any]:
    cfg = self.config
    os.makedirs(cfg.logdir, exist_ok=True)
    self._fault: Optional[str] = None
    self._signal: Optional[int] = None
    self._storages = Storages(StorageSpec(cfg.alpha, cfg.num_envs, self.info.obs_shape,
                                          self.info.obs_dtype, self.info.num_agents),
                              create=True)
    ctx = mp.get_context("spawn")
    self._ready_q = ctx.SimpleQueue()
    self._ctrl_q = ctx.Queue()
    self._inboxes = [ctx.SimpleQueue() for _ in range(cfg.num_executors)]
    self._procs: List[mp.Process] = []
    self._threads: List[threading.Thread] = []
    self._learn_q: "queue.Queue" = queue.Queue()
    self._learn_out: "queue.Queue" = queue.Queue()
    self._drain_lock = threading.Lock()
    self._actor_idle = [0.0] * cfg.num_actors
    self._actor_batches = [0] * cfg.num_actors
    self._learner_idle = 0.0
    book = self._new_book() if self.restored is None else self.restored["host"]["book"]
    self._book = book
    self._num_updates = int(self.state.update_count)  # the learner thread advances it
    self._actor_params = (self._num_updates, self.state.params)  # (version, params)
    first_segment = 0
    self._restored_unlearned = None
    if self.restored is not None:
      first_segment = self.restored["host"]["segment"] + 1
      if not self.restored["host"].get("learned"):
        self._restored_unlearned = first_segment - 1
      st = self._storages[(first_segment - 1) % 2]
      for name, value in self.restored["storage"].items():
        getattr(st, name)[...] = value
    metrics_writer = reporting.MetricsWriter(cfg.logdir, keep_updates=(
        None if self.restored is None else self._num_updates))
    evaluator = Evaluator(cfg.env, cfg.env_kwargs, self.network.apply, cfg.eval_episodes,
                          cfg.seed, greedy=cfg.eval_greedy, results=book["eval"],
                          num_agents=self.num_agents)
    old_handlers = self._install_signal_handlers()
    try:
      self._start_parts(first_segment)
      summary = self._control(metrics_writer, evaluator, first_segment)
    finally:
      self._restore_signal_handlers(old_handlers)
      self._shutdown()
      metrics_writer.close()
      evaluator.close(wait=self._fault is None)
    summary["eval"] = [{k: r[k] for k in ("env_steps", "wall_time_s", "mean_return", "returns")
                        if k in r} for r in evaluator.results]
    if evaluator.error:
      raise RunError(evaluator.error)
    reporting.write_json_atomic(os.path.join(cfg.logdir, "summary.json"), summary)
    return summary

  def _start_parts(self, first_segment: int) -> None:
    """Executors (or envpool groups), actor threads and the learner thread."""
    if self.config.envpool:
      self._start_envpool_groups(first_segment)
    else:
      self._start_executors(first_segment)
      for i in range(self.config.num_actors):
        self._start_thread(self._actor_loop, f"actor-{i}", i)
    self._start_thread(self._learner_loop, "learner")

  def _new_book(self) -> Dict[str, Any]:
    """Host-side bookkeeping that a checkpoint carries (JSON-able)."""
    cfg = self.config
    return {"returns": [[] for _ in range(cfg.num_envs)], "lags": [], "eval": [],
            "next_eval": cfg.eval_every if cfg.eval_every > 0 else None, "last_eval": None,
            "wall_time_s": 0.0, "rollout_s": 0.0, "learn_s": 0.0, "env_busy_s": 0.0,
            "exec_idle_actions": 0.0, "exec_idle_barrier": 0.0, "actor_idle": 0.0,
            "learner_idle": 0.0, "actor_batches": 0}

  # ---------------------------------------------------------------- controller
  def _control(self, metrics_writer, evaluator, first_segment: int) -> Dict[str, Any]:
    cfg, book = self.config, self._book
    n_seg = cfg.num_segments
    recent: List[float] = []
    progress = reporting.Progress(n_seg * cfg.steps_per_segment, cfg.log_every_s, "hts")
    wall_before = book["wall_time_s"]
    self._release_executors(first_segment)  # the clock starts when every executor is ready
    t_start = time.perf_counter()
    wall = lambda: wall_before + time.perf_counter() - t_start
    if self._restored_unlearned is not None:
      self._learn_q.put(self._restored_unlearned)  # restored storage, not yet learned
    t_seg = time.perf_counter()
    last_seg = n_seg - 1
    for seg in range(first_segment, n_seg):
      recent.extend(self._record_reports(self._wait_executors(seg)))
      book["rollout_s"] += time.perf_counter() - t_seg
      if seg > 0:
        self._finish_update(metrics_writer, recent, seg * cfg.steps_per_segment, wall())
        recent = []
      # Checkpoint point: segment `seg` collected, update on `seg - 1` done, nothing in flight.
      if seg + 1 < n_seg:
        self._maybe_checkpoint(seg, evaluator, wall())
      # Swap: the executors go on in the other storage with θ_{seg} while the learner takes this
      # one. The learner has finished with that other storage (waited for above).
      self._actor_params = (self._num_updates, self.state.params)
      t_seg = time.perf_counter()
      reached = self._target_reached(evaluator)
      if seg + 1 < n_seg and not reached:
        for inbox in self._inboxes:
          inbox.put(("go", seg + 1))
      self._learn_q.put(seg)
      last_seg = seg
      steps = (seg + 1) * cfg.steps_per_segment
      self._evaluate_and_report(steps, wall(), evaluator, progress)
      if reached:
        break
    steps = (last_seg + 1) * cfg.steps_per_segment
    self._finish_update(metrics_writer, recent, steps, wall())
    return self._final_summary(evaluator, steps, wall(), progress)

  def _record_reports(self, msgs) -> List[float]:
    """Books the executors' "done" reports; returns the episode returns they finished."""
    book, finished = self._book, []
    for _, _, _, rets, _, idle_a, idle_b, busy in msgs:
      for e, rs in rets.items():
        book["returns"][e].extend(rs)
        finished.extend(rs)
      book["exec_idle_actions"] += idle_a
      book["exec_idle_barrier"] += idle_b
      book["env_busy_s"] += busy
    return finished

  def _maybe_checkpoint(self, seg: int, evaluator, wall: float, learned: bool = False) -> None:
    """Checkpoints when due or when a signal asked for it (and then stops the run)."""
    cfg = self.config
    due = cfg.checkpoint_every > 0 and self._num_updates % cfg.checkpoint_every == 0
    if due or self._signal is not None:
      path = self._checkpoint(seg, evaluator, wall, learned=learned)
      if self._signal is not None:
        raise Interrupted(interrupted_message(self._signal, self._num_updates, path),
                          self._signal)

  def _evaluate_and_report(self, steps: int, wall: float, evaluator, progress) -> None:
    """Submits an evaluation when one is due and prints progress."""
    cfg, book = self.config, self._book
    if book["next_eval"] is not None and steps >= book["next_eval"]:
      evaluator.submit(steps, wall, self.state.params)
      book["last_eval"] = steps
      while book["next_eval"] <= steps:
        book["next_eval"] += cfg.eval_every
    progress.update(steps, wall, self._num_updates, reporting.mean_or_none(
        [r for rs in book["returns"] for r in rs[-5:]]), evaluator.latest())

  def _target_reached(self, evaluator) -> bool:
    target = self.config.stop_at_return
    return target is not None and any(r["mean_return"] >= target for r in evaluator.results)

  def _release_executors(self, first_segment: int) -> None:
    """Waits until every executor has created its envs, then lets them start `first_segment`."""
    if self.config.envpool:
      return
    started = 0
    while started < self.config.num_executors:
      started += self._ctrl_message()[0] == "started"
    for inbox in self._inboxes:
      inbox.put(("go", first_segment))

  def _book_totals(self) -> Dict[str, Any]:
    """The book with this session's actor/learner counters added (they live outside it)."""
    book = self._book
    return dict(book, actor_idle=book["actor_idle"] + float(sum(self._actor_idle)),
                learner_idle=book["learner_idle"] + self._learner_idle,
                actor_batches=book["actor_batches"] + int(sum(self._actor_batches)))

  def _final_summary(self, evaluator, steps: int, total_wall: float, progress) -> Dict[str, Any]:
    """Final evaluation and the summary.json contract."""
    cfg, book = self.config, self._book_totals()
    if book["last_eval"] != steps:  # the final params are always evaluated, once
      evaluator.submit(steps, total_wall, self.state.params)
    evaluator.close(wait=True)
    progress.update(steps, total_wall, self._num_updates, None, evaluator.latest(), force=True)
    return {
        "env_steps": steps, "updates": self._num_updates, "wall_time_s": total_wall,
        "sps": steps / total_wall, "mode": cfg.mode, "algo": cfg.learner.algo, "env": cfg.env,
        "alpha": cfg.alpha, "num_actors": cfg.num_actors, "num_executors": cfg.num_executors,
        "num_envs": cfg.num_envs, "seed": cfg.seed,
        "correction": {"hts": cfg.learner.correction, "sync": "none", "async": "vtrace"}[cfg.mode],
        "network": self.network_kind,
        "param_sha256": reporting.param_sha256(self.state.params),
        "episode_returns": book["returns"],
        "policy_lag": reporting.lag_summary(book["lags"]),
        "idle": {"executors": book["exec_idle_actions"] + book["exec_idle_barrier"],
                 "executors_waiting_for_actions": book["exec_idle_actions"],
                 "executors_at_barrier": book["exec_idle_barrier"],
                 "actors": book["actor_idle"], "learner": book["learner_idle"]},
        "timing": {"rollout_s": book["rollout_s"], "learn_s": book["learn_s"],
                   "env_busy_s": book["env_busy_s"], "actor_batches": book["actor_batches"],
                   "compile_s": self.compile_s},
        "resumed_from_update": None if self.restored is None else self.restored["step"],
        "config": cfg.to_dict(),
    }

  def _finish_update(self, metrics_writer, recent_returns, env_steps, wall) -> None:
    """Waits for the learner's current update and logs it."""
    self._log_update(metrics_writer, *self._wait_learner(), recent_returns, env_steps, wall)

  def _log_update(self, metrics_writer, seg, metrics, seg_lags, compute_s, recent_returns,
                  env_steps, wall) -> None:
    """Books one learner update and writes its metrics.csv row."""
    self._book["lags"].append(seg_lags)
    self._book["learn_s"] += compute_s
    row = {"env_steps": env_steps, "updates": self._num_updates, "wall_time_s": wall,
           "sps": env_steps / wall, "segment": seg, "lag": seg_lags, "learn_s": compute_s,
           "train_return": reporting.mean_or_none(recent_returns)}
    row.update({k: float(v) for k, v in metrics.items()})
    metrics_writer.write(row)

  def _checkpoint(self, seg: int, evaluator, wall: float, learned: bool = False) -> str:
    """Saves the run at the boundary after segment `seg` (see `checkpoint`); `learned`: the
    learner has already consumed that segment (the synchronous baseline)."""
    cfg = self.config
    for inbox in self._inboxes:
      inbox.put(("save",))
    env_states: Optional[Dict[int, bytes]] = {}
    for _ in range(len(self._inboxes)):
      _, _, states, _ = self._ctrl_message()
      if states is None or env_states is None:
        env_states = None  # some env cannot be pickled: a resume re-creates the envs
      else:
        env_states.update(states)
    evaluator.wait_idle()
    book = dict(self._book_totals(), eval=list(evaluator.results), wall_time_s=wall)
    st = self._storages[seg % 2]
    storage = {name: getattr(st, name) for name in ("obs", "actions", "version", "rewards",
                                                     "dones")}
    host = {"segment": seg, "learned": learned, "book": book,
            "config": json.loads(json.dumps(cfg.to_dict()))}
    return checkpoint.save(cfg.logdir, self._num_updates, self.state, storage, env_states, host)

  def _wait_executors(self, seg: int) -> List[tuple]:
    got: Dict[int, tuple] = {}
    while len(got) < len(self._inboxes):  # executors (or envpool groups)
      msg = self._ctrl_message()
      assert msg[0] == "done" and msg[2] == seg, msg
      got[msg[1]] = msg
    return [got[i] for i in sorted(got)]

  def _ctrl_message(self) -> tuple:
    """The next control-queue message; an executor's error message stops the run."""
    msg = self._poll_until(self._ctrl_q)
    if msg[0] == "error":
      raise RunError(_executor_error(msg))
    return msg

  def _wait_learner(self):
    return self._poll_until(self._learn_out)

  def _poll_until(self, q):
    while True:
      item = self._poll(q)
      if item is not None:
        return item

  def _poll(self, q):
    """One short wait on `q`; raises RunError if any part has failed meanwhile."""
    try:
      return q.get(timeout=_POLL_S)
    except queue.Empty:
      pass
    self._check_parts()
    return None

  def _get_simple(self, q):
    """Blocking get on a multiprocessing SimpleQueue, checking the other parts meanwhile."""
    while not q._reader.poll(_POLL_S):  # pylint: disable=protected-access
      self._check_parts()
    return q.get()

  def _check_parts(self) -> None:
    """Raises RunError if a thread failed or an executor process died."""
    if self._fault is not None:
      raise RunError(self._fault)
    for i, p in enumerate(self._procs):
      if not p.is_alive():
        # An error message may be in flight: prefer it over the bare exit code.
        try:
          msg = self._ctrl_q.get(timeout=0.5)
        except queue.Empty:
          msg = None
        if msg is not None and msg[0] == "error":
          raise RunError(_executor_error(msg))
        ids = self.config.env_ids_of_executor(i)
        raise RunError(f"executor {i} (envs {ids[0]}-{ids[-1]}) died with exit code "
                       f"{p.exitcode}")

  def _install_signal_handlers(self):
    """SIGINT/SIGTERM ask for a checkpoint at the next segment boundary; a second SIGINT aborts."""
    if threading.current_thread() is not threading.main_thread():
      return None

    def handler(signum, frame):
      if self._signal is not None and signum == signal.SIGINT:
        raise KeyboardInterrupt
      self._signal = signum

    return {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}

  def _restore_signal_handlers(self, old) -> None:
    for s, h in (old or {}).items():
      signal.signal(s, h)

  # ---------------------------------------------------------------- parts
  def _start_executors(self, first_segment: int, ready_qs=None, ctrl_qs=None) -> None:
    """Spawns the executors; by default they share the ready queue and the control queue."""
    cfg = self.config
    saved = None if self.restored is None else self.restored["envs"]
    for i in range(cfg.num_executors):
      ids = cfg.env_ids_of_executor(i)
      spec = ExecutorSpec(index=i, env_ids=ids, env=cfg.env, env_kwargs=cfg.env_kwargs,
                          seed=cfg.seed, alpha=cfg.alpha, storage=self._storages.spec,
                          delay_s=cfg.executor_delay_s, jitter_s=cfg.executor_jitter_s,
                          decorrelate_steps=cfg.decorrelate_steps, first_segment=first_segment,
                          env_states=None if saved is None else {e: saved[e] for e in ids})
      p = mp.get_context("spawn").Process(
          target=executor_main,
          args=(spec, self._ready_q if ready_qs is None else ready_qs[i], self._inboxes[i],
                self._ctrl_q if ctrl_qs is None else ctrl_qs[i]),
          name=f"hts-executor-{i}", daemon=True)
      p.start()
      self._procs.append(p)

  def _start_envpool_groups(self, first_segment: int) -> None:
    """envpool fast path: actor threads with their own envpool instances act as executors."""
    from hts_jax.runtime.envpool_group import EnvpoolGroup  # pylint: disable=import-outside-toplevel
    cfg = self.config
    m = cfg.num_envs // cfg.num_actors
    threads = max(1, cfg.num_executors // cfg.num_actors)
    self._inboxes = []
    for g in range(cfg.num_actors):
      group = EnvpoolGroup(g, m, cfg.env.split(":", 1)[1], cfg.env_kwargs, cfg.seed, cfg.alpha,
                           threads, self._storages, self.policy, self.streams,
                           lambda: self._actor_params, self._ctrl_q, first_segment)
      self._inboxes.append(group.inbox)
      self._start_thread(group.run, f"envpool-{g}")

  def _start_thread(self, fn, name, *args) -> None:
    def guarded():
      try:
        fn(*args)
      except Exception as e:  # pylint: disable=broad-except
        if self._fault is None:
          self._fault = f"{name}: {type(e).__name__}: {e}".splitlines()[0]
    th = threading.Thread(target=guarded, name=name, daemon=True)
    th.start()
    self._threads.append(th)

  def _actor_loop(self, index: int) -> None:
    """Takes *all* ready observations, runs one fixed-shape keyed policy step, returns actions."""
    cfg = self.config
    per_exec = cfg.num_envs // cfg.num_executors
    agents = self.num_agents
    obs_buf = np.zeros((self.num_rows,) + self.info.obs_shape, self.info.obs_dtype)
    seeds = np.zeros((self.num_rows, 2), np.uint32)
    seeds[:, 0] = self.streams
    while True:
      t0 = time.perf_counter()
      with self._drain_lock:
        msgs = [self._ready_q.get()]
        while not self._ready_q.empty():
          msgs.append(self._ready_q.get())
      self._actor_idle[index] += time.perf_counter() - t0
      stop = any(m is None for m in msgs)
      msgs = [m for m in msgs if m is not None]
      if msgs:
        seg = msgs[0][0]
        pairs = [p for m in msgs for p in m[1]]
        if any(m[0] != seg for m in msgs):
          raise RuntimeError("observations of two segments in one batch")
        env_ids = np.fromiter((e for e, _ in pairs), np.int64, len(pairs))
        ts = np.fromiter((t for _, t in pairs), np.int64, len(pairs))
        rows = (env_ids[:, None] * agents + np.arange(agents)).ravel()
        ts = np.repeat(ts, agents)
        st = self._storages[seg % 2]
        obs_buf[rows] = st.obs[ts, rows]
        seeds[rows, 1] = seg * cfg.alpha + ts  # the env's global step
        version, params = self._actor_params
        actions = self.policy.run_actions(params, obs_buf, seeds)
        st.actions[ts, rows] = actions[rows]
        st.version[ts, rows] = version
        self._actor_batches[index] += 1
        owners = env_ids // per_exec
        for k in np.unique(owners):
          self._inboxes[k].put(env_ids[owners == k].tolist())
      if stop:
        return

  def _learner_loop(self) -> None:
    """Runs the delayed-gradient update on each finished storage, concurrently with rollout."""
    while True:
      t0 = time.perf_counter()
      seg = self._learn_q.get()
      if seg is None:
        return
      if seg > 0 and self._num_updates > 0:  # the wait for the very first segment is inherent
        self._learner_idle += time.perf_counter() - t0
      t1 = time.perf_counter()
      metrics, lag = self._learn_storage(seg)
      if self.config.learner_delay_s:
        time.sleep(self.config.learner_delay_s)
      self._learn_out.put((seg, metrics, lag, time.perf_counter() - t1))

  def _learn_storage(self, seg: int):
    """One learner update on storage `seg`; returns (host metrics, policy lag of the segment).
    The params change only if the update is finite."""
    st = self._storages[seg % 2]
    segment = Segment(obs=jnp.asarray(st.obs), actions=jnp.asarray(st.actions),
                      rewards=jnp.asarray(st.rewards), dones=jnp.asarray(st.dones))
    behaviour_versions = np.unique(st.version)
    if len(behaviour_versions) != 1:
      raise RuntimeError(f"segment {seg} mixes policy versions {behaviour_versions.tolist()}")
    lag = self._num_updates - int(behaviour_versions[0])
    state, metrics = self.learner_step(self.state, segment)
    metrics = jax.device_get(metrics)  # the one host sync per segment
    check_finite(metrics, self._num_updates + 1, seg)
    self.state = state
    self._num_updates += 1
    return metrics, lag

  def _shutdown(self) -> None:
    for inbox in self._inboxes:
      try:
        inbox.put(None)
      except Exception:  # pylint: disable=broad-except
        pass
    deadline = time.monotonic() + 2.0
    for p in self._procs:
      p.join(timeout=max(0.0, deadline - time.monotonic()))
    for p in self._procs:
      if p.is_alive():
        p.terminate()
        p.join(timeout=1.0)
      if p.is_alive():
        p.kill()
        p.join()
    for _ in range(self.config.num_actors):
      self._ready_q.put(None)
    self._learn_q.put(None)
    for th in self._threads:
      th.join(timeout=5.0)
    self._ctrl_q.close()
    self._ctrl_q.cancel_join_thread()
    self._storages.close()


def check_finite(metrics, update: int, seg: Optional[int]) -> None:
  """Raises FloatingPointError naming the update if the loss or the new params are not finite."""
  if not (np.isfinite(metrics["loss"]) and metrics["params_finite"]):
    what = "loss" if not np.isfinite(metrics["loss"]) else "params"
    where = "" if seg is None else f" (segment {seg})"
    raise FloatingPointError(f"non-finite {what} at update {update}{where}; the last checkpoint "
                             "is kept")


def interrupted_message(signum: int, updates: int, path: str) -> str:
  return (f"interrupted by {signal.Signals(signum).name} at update {updates}; checkpoint saved in "
          f"{path}; continue with --resume")


def _executor_error(msg) -> str:
  _, idx, env_id, text = msg
  return f"executor {idx}" + (f", env {env_id}" if env_id is not None else "") + f": {text}"


def _local_devices(count: int, name: str):
  """None for one device (plain jit), else the first `count` local devices."""
  if count == 1:
    return None
  devices = jax.local_devices()
  if count > len(devices):
    raise ConfigError(f"{name}={count} but only {len(devices)} local devices "
                      f"({devices[0].platform})")
  return devices[:count]


def make_runner(config: RunConfig, resume: bool = False) -> HTSRunner:
  """The runner for `config.mode`: hts, sync (A2C/PPO as in baselines) or async (IMPALA)."""
  if config.mode == "hts":
    return HTSRunner(config, resume=resume)
  from hts_jax.runtime import baselines  # pylint: disable=import-outside-toplevel
  cls = baselines.SyncRunner if config.mode == "sync" else baselines.AsyncRunner
  return cls(config, resume=resume)


def run(config: RunConfig, resume: bool = False) -> Dict[str, Any]:
  """Runs the configured mode and returns the summary (also written to `<logdir>/summary.json`)."""
  return make_runner(config, resume=resume).run()
