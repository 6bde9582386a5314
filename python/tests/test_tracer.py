"""The ex-situ tracer against real multi-process runs of the reference script (docs/TRACER.md).

Run: /usr/bin/python3 -m unittest discover -s python/tests   (needs Debian's python3-torch)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(PYTHON_DIR, "examples", "megatron_gpt.py")
sys.path.insert(0, PYTHON_DIR)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from stepsim.trace import fake_dist  # noqa: E402
from stepsim.trace.recorder import Recorder  # noqa: E402

F32 = 4  # bytes per float32
# The reference model of both tests: hidden 32, 4 heads, vocab 64, sequence 16, micro-batch 2, 4 micro-batches.
MODEL = ["--layers", "2", "--hidden", "32", "--heads", "4", "--vocab", "64", "--seq", "16",
         "--micro-batch", "2", "--num-microbatches", "4"]
ACTIVATION = 2 * 16 * 32 * F32  # micro-batch x sequence x hidden


def tracer(*args):
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR, OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "stepsim.trace", "--quiet", "--device", "cpu", *args],
                          env=env, capture_output=True, text=True, timeout=300)


def comm(out, rank):
    with open(os.path.join(out, "rank%d.comm.json" % rank)) as f:
        return [{k: v for k, v in r.items() if k != "index"} for r in json.load(f)]


class TracedEqualsReal(unittest.TestCase):
    """Every rank's communication sequence is the same traced alone as run for real with gloo."""

    def run_both(self, world, script_args, trace_in_parts=None):
        real, traced = tempfile.mkdtemp(), tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, real)
        self.addCleanup(shutil.rmtree, traced)
        r = tracer("--real", "--world-size", str(world), "--out", real, "--", SCRIPT, *script_args)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.traced_after_part = []
        for part in trace_in_parts or [[]]:
            r = tracer("--world-size", str(world), "--out", traced, *part, "--", SCRIPT, *script_args)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.traced_after_part.append(sorted(f for f in os.listdir(traced) if f.endswith(".comm.json")))
        for rank in range(world):
            self.assertEqual(comm(traced, rank), comm(real, rank), "rank %d" % rank)
        return traced

    def test_tp2_pp2_batched_p2p(self):
        out = self.run_both(4, ["--tp", "2", "--pp", "2", "--p2p", "batch", *MODEL])
        # Rank 0 = (tp 0, pp 0): one layer and the embedding, TP group [0, 1], next stage rank 2.
        # Forward of a micro-batch: embedding, attention projection and FC2 all-reduce (g); backward: FC1 and
        # QKV input-gradient all-reduce (f). 1F1B on stage 0 of 2: one warm-up forward, three steady
        # 1F1B pairs, one cool-down backward.
        ar = {"op": "all_reduce", "group_ranks": [0, 1], "bytes": ACTIVATION, "dtype": "float32", "async": False}
        fwd, bwd = [ar] * 3, [ar] * 2

        def p2p(op, batch):
            return {"op": op, "group_ranks": [0, 1, 2, 3], "bytes": ACTIVATION, "dtype": "float32",
                    "async": True, "peer": 2, "batch": batch}
        want = fwd + [p2p("isend", 0)]
        for b in (1, 2, 3):
            want += fwd + [p2p("isend", b), p2p("irecv", b)] + bwd
        want += [p2p("irecv", 4)] + bwd
        want += [{"op": "all_reduce", "group_ranks": [0, 1, 2, 3], "bytes": F32, "dtype": "float32", "async": False},
                 {"op": "barrier", "group_ranks": [0, 1, 2, 3], "bytes": 0, "dtype": None, "async": False}]
        self.assertEqual(comm(out, 0), want)
        self.check_workload(out, 0)
        self.check_simulates(out)

    def test_dp2_pp2_single_p2p_and_rank_subsets(self):
        out = self.run_both(4, ["--pp", "2", "--p2p", "single", *MODEL],
                            trace_in_parts=[["--ranks", "0,1"], ["--ranks", "2-3", "--no-profile"]])
        # Rank 3 = (dp 1, pp 1), last stage: DP group [2, 3], model-parallel group [1, 3], previous stage 1.
        seq = comm(out, 3)
        self.assertEqual(seq[0], {"op": "recv", "group_ranks": [0, 1, 2, 3], "bytes": ACTIVATION,
                                  "dtype": "float32", "async": False, "peer": 1})
        self.assertEqual([r["op"] for r in seq[1:7]], ["isend", "irecv"] * 3)
        self.assertEqual(seq[7]["op"], "send")
        # Gradients of one block (2 layernorms, QKV, projection, FC1, FC2 with biases), final layernorm
        # and the output layer: 64+64+3168+1056+4224+4128 + 64 + 2112 = 14880 floats in one all-reduce.
        self.assertEqual(seq[8], {"op": "all_reduce", "group_ranks": [2, 3], "bytes": 14880 * F32,
                                  "dtype": "float32", "async": False})
        self.assertEqual([(r["op"], r["group_ranks"], r["bytes"]) for r in seq[9:]],
                         [("all_reduce", [1, 3], F32), ("all_reduce", [2, 3], F32), ("barrier", [0, 1, 2, 3], 0)])
        self.assertEqual(self.traced_after_part[0], ["rank0.comm.json", "rank1.comm.json"])
        self.check_workload(out, 1)
        with open(os.path.join(out, "rank3.workload.json")) as f:
            self.assertNotIn("ops", json.load(f))  # traced with --no-profile

    def check_simulates(self, out):
        """`stepsim simulate JOB --workload DIR` replays the four traced ranks (docs/TRACE-SIMULATION.md)."""
        binary = os.environ.get("STEPSIM_BINARY")
        if not binary:
            return  # run outside ctest: no stepsim binary to call
        job = os.path.join(out, "job.yaml")
        with open(job, "w") as f:
            f.write("model: {name: tiny-gpt, num_layers: 2, hidden_size: 32, num_attention_heads: 4,"
                    " ffn_hidden_size: 128, vocab_size: 64, seq_length: 16}\n"
                    "parallelism: {tensor: 2, pipeline: 2}\n"
                    "training: {micro_batch_size: 2, global_batch_size: 8, precision: fp32}\n"
                    "cluster: {gpu: A100-80GB, num_gpus: 4, gpus_per_node: 4}\n")
        summaries = []
        for extra in ([], ["--no-host-gaps"]):
            summary = os.path.join(out, "summary%d.json" % len(summaries))
            r = subprocess.run([binary, "simulate", job, "--workload", out, "--json", summary, "--quiet", *extra],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            with open(summary) as f:
                summaries.append(json.load(f))
        s = summaries[0]
        self.assertEqual((s["workload"]["traced_ranks"], s["workload"]["reused_ranks"]), (4, 0))
        # Rank 0's calls, as asserted above: 20 TP all-reduces of one activation, 5 p2p batches (4 of them send an
        # activation), the grad-norm all-reduce and the barrier on the world: with DP = 1 those two span TP x PP and
        # are `world`, not `dp` (issue 15 item 5).
        self.assertEqual(s["comm_calls_per_rank"], {"tp": 20, "pp": 5, "dp": 0, "cp": 0, "ep": 0, "world": 2})
        self.assertEqual(s["comm_message_bytes_per_rank"]["tp"], 20 * ACTIVATION)
        self.assertEqual(s["comm_message_bytes_per_rank"]["pp"], 4 * ACTIVATION)
        # Memory replays the traced allocations: each stage's peak is its ranks' traced peak.
        peaks = []
        for rank in range(4):
            with open(os.path.join(out, "rank%d.workload.json" % rank)) as f:
                peaks.append(json.load(f)["memory"]["peak_in_step_bytes"])
        stages = s["memory"]["per_stage"]
        self.assertEqual([st["peak_bytes"] for st in stages], [max(peaks[0:2]), max(peaks[2:4])])
        self.assertLess(summaries[1]["step_time_s"], s["step_time_s"])  # without the CPU's gaps
        self.assertGreater(s["breakdown_s"]["host_gap"], 0)

    def check_workload(self, out, rank):
        with open(os.path.join(out, "rank%d.workload.json" % rank)) as f:
            w = json.load(f)
        self.assertEqual((w["format"], w["rank"], w["world_size"]), ("stepsim.workload", rank, 4))
        self.assertEqual([{k: v for k, v in r.items() if k != "index"} for r in w["comm"]], comm(out, rank))
        marked = {op["comm_index"] for op in w["ops"] if "comm_index" in op}
        unbatched = {r["index"] for r in w["comm"] if "batch" not in r}
        self.assertLessEqual(unbatched, marked)  # each call is placed among the compute ops
        self.assertTrue(any(op["name"] == "aten::addmm" or op["name"] == "aten::mm" for op in w["ops"]))
        if w["execution_trace"]:
            self.assertTrue(os.path.exists(os.path.join(out, w["execution_trace"])))


def load_tests(loader, tests, pattern):
    """STEPSIM_TEST_SHARD=i/n keeps every n-th test from the i-th (by test id): ctest runs the two real-gloo tests,
    about 22 s each, as two entries that can share the machine's cores instead of one after the other."""
    shard = os.environ.get("STEPSIM_TEST_SHARD")
    if not shard:
        return tests
    index, count = (int(x) for x in shard.split("/"))

    def flat(suite):
        for t in suite:
            yield from (flat(t) if isinstance(t, unittest.TestSuite) else [t])
    ordered = sorted(flat(tests), key=lambda t: t.id())
    return unittest.TestSuite(t for k, t in enumerate(ordered) if k % count == index)


class FakeCollectives(unittest.TestCase):
    """Rank 1 of 4 alone: calls return at once with correctly shaped local results and are recorded."""

    def setUp(self):
        self.rec = Recorder(1, 4)
        self.patch = fake_dist.install(self.rec)
        dist.init_process_group("gloo")

    def tearDown(self):
        self.patch.restore()

    def test_groups_and_ranks(self):
        g = dist.new_group([3, 1])
        other = dist.new_group([0, 2])
        self.assertEqual((dist.get_rank(), dist.get_world_size()), (1, 4))
        self.assertEqual((dist.get_rank(g), dist.get_world_size(g)), (0, 2))
        self.assertEqual(dist.get_rank(other), -1)
        self.assertIsNone(dist.all_reduce(torch.ones(3), group=other))  # not a member: nothing, as torch
        self.assertEqual(self.rec.records, [])

    def test_outputs(self):
        g = dist.new_group([0, 1, 2])
        x = torch.tensor([1.0, 2.0])
        parts = [torch.zeros(2) for _ in range(3)]
        dist.all_gather(parts, x, group=g)
        self.assertTrue(all(torch.equal(p, x) for p in parts))
        full = torch.zeros(6)
        dist.all_gather_into_tensor(full, x, group=g)
        self.assertEqual(full.tolist(), [1, 2, 1, 2, 1, 2])
        shard = torch.zeros(2)
        dist.reduce_scatter_tensor(shard, torch.arange(6.0), group=g)
        self.assertEqual(shard.tolist(), [2, 3])  # rank 1 is index 1 of [0, 1, 2]
        buf = torch.ones(4, dtype=torch.float16)
        work = dist.irecv(buf, src=0)
        self.assertTrue(work.wait())
        self.assertEqual(buf.tolist(), [0, 0, 0, 0])
        self.assertTrue(dist.all_reduce(x, async_op=True).wait())
        self.assertEqual([(r["op"], r["group_ranks"], r["bytes"], r["dtype"], r["async"]) for r in self.rec.records],
                         [("all_gather", [0, 1, 2], 24, "float32", False),
                          ("all_gather_into_tensor", [0, 1, 2], 24, "float32", False),
                          ("reduce_scatter_tensor", [0, 1, 2], 24, "float32", False),
                          ("irecv", [0, 1, 2, 3], 8, "float16", True),
                          ("all_reduce", [0, 1, 2, 3], 8, "float32", True)])
        self.assertEqual(self.rec.records[3]["peer"], 0)

    def test_batched_p2p(self):
        got = torch.ones(2)
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, torch.ones(3), 2),
                                       dist.P2POp(dist.irecv, got, 0)])
        self.assertTrue(all(r.wait() for r in reqs))
        self.assertEqual(got.tolist(), [0, 0])
        self.assertEqual([(r["op"], r["peer"], r["bytes"], r["batch"]) for r in self.rec.records],
                         [("isend", 2, 12, 0), ("irecv", 0, 8, 0)])


if __name__ == "__main__":
    unittest.main()
