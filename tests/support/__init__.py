"""What the tests share, so that no test file imports another: the repository root, the
command-line helpers (`cli`), the one small-run config builder (`runs`), the multi-process
helpers (`processes`) and the misbehaving envs (`fault_envs`, named as
`--env=tests.support.fault_envs:<Id>`)."""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
