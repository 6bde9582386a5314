"""The Python API (stepsim.simulate, ...) against the CLI: the same job gives the same numbers, bit for bit
(docs/PYTHON.md).

Runs under CTest's PythonAPI entry, which puts the build's package first (PYTHONPATH=BUILD/python) and names the
CLI (STEPSIM_BINARY); elsewhere (the tracer's discovery of this folder) it skips.
"""
import copy
import json
import os
import subprocess
import sys
import tempfile
import threading
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
JOB = os.path.join(ROOT, "examples", "llama2-7b-8.yaml")
SMALL = ["model.num_layers=8"]  # a quarter of the layers: quick, same code paths
stepsim = None


def setUpModule():
    global stepsim
    if not os.environ.get("STEPSIM_PYTHON_API"):
        raise unittest.SkipTest("run by CTest's PythonAPI entry (needs the built extension)")
    import stepsim as s
    stepsim = s


def cli(*args, check=True):
    r = subprocess.run([os.environ["STEPSIM_BINARY"], *args], capture_output=True, text=True, timeout=300)
    if check and r.returncode != 0:
        raise AssertionError("stepsim %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr))
    return r


def cli_json(*args, flag="--json"):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        cli(*args, flag, out)
        with open(out) as f:
            return json.load(f)


def cli_error(*args):
    r = cli(*args, check=False)
    assert r.returncode == 2, (r.returncode, r.stderr)
    line = r.stderr.strip()
    assert line.startswith("stepsim: error: "), line
    return line[len("stepsim: error: "):]


def without_wall(summary):
    s = copy.deepcopy(summary)
    del s["simulation"]["wall_s"]  # the engine's own run time, the one figure that differs between runs
    return s


def sets(overrides):
    return [x for o in overrides for x in ("--set", o)]


class SimulateTest(unittest.TestCase):
    def test_summary_is_the_cli_json(self):
        cli_sum = cli_json("simulate", JOB, "--quiet", *sets(SMALL))
        r = stepsim.simulate(JOB, overrides=SMALL)
        self.assertEqual(r.summary["step_time_s"], cli_sum["step_time_s"])  # bit-identical
        self.assertEqual(without_wall(r.summary), without_wall(cli_sum))  # every key, every value
        self.assertGreater(r.step_time_s, 0)
        self.assertIn("stepsim: llama2-7b on 8 x H100-SXM", r.text)

    def test_overrides_change_the_result_as_set_does(self):
        base = stepsim.simulate(JOB, overrides={"model.num_layers": 8})
        more = stepsim.simulate(JOB, overrides={"model.num_layers": 16, "training.recompute": "full"})
        cli_more = cli_json("simulate", JOB, "--quiet", "--set", "model.num_layers=16",
                            "--set", "training.recompute=full")
        self.assertEqual(more.summary["step_time_s"], cli_more["step_time_s"])
        self.assertGreater(more.step_time_s, 1.5 * base.step_time_s)
        # The list form is --set's text
        self.assertEqual(stepsim.simulate(JOB, overrides=["model.num_layers=16", "training.recompute=full"])
                         .summary["step_time_s"], cli_more["step_time_s"])

    def test_job_as_dict_and_hf_config(self):
        import yaml
        with open(JOB) as f:
            tree = yaml.safe_load(f)
        tree["model"]["num_layers"] = 8
        from_file = stepsim.simulate(JOB, overrides=SMALL).summary
        self.assertEqual(stepsim.simulate(tree).summary["step_time_s"], from_file["step_time_s"])
        # Sections as keyword arguments over the dict
        par = dict(tree["parallelism"], tensor=2, data=4)
        cli_tp2 = cli_json("simulate", JOB, "--quiet", *sets(SMALL + ["parallelism.tensor=2", "parallelism.data=4"]))
        self.assertEqual(stepsim.simulate(tree, parallelism=par).summary["step_time_s"], cli_tp2["step_time_s"])

        # A Hugging Face config: as a path in the model section, as hf_config=path, and as a dict, all the same
        hf = os.path.join(ROOT, "tests", "data", "hf", "gpt2.json")
        sections = {"parallelism": {"tensor": 1, "data": 8},
                    "training": {"micro_batch_size": 1, "global_batch_size": 16},
                    "cluster": {"gpu": "H100-SXM", "num_gpus": 8, "gpus_per_node": 8}}
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "hf-job.yaml")
            with open(path, "w") as f:
                yaml.safe_dump(dict(sections, model={"hf_config": hf, "seq_length": 1024}), f)
            want = cli_json("simulate", path, "--quiet")
        kw = dict(sections, model={"seq_length": 1024})
        a = stepsim.simulate(hf_config=hf, **kw).summary
        with open(hf) as f:
            b = stepsim.simulate(hf_config=json.load(f), **kw).summary
        self.assertEqual(a["step_time_s"], want["step_time_s"])
        self.assertEqual(b["step_time_s"], want["step_time_s"])
        self.assertEqual(a["assumptions"], want["assumptions"])
        self.assertEqual(b["assumptions"], want["assumptions"])
        # Beside a job file, as the CLI's `JOB.yaml --hf-config C.json`: the same job.
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "job-without-model.yaml")
            with open(path, "w") as f:
                yaml.safe_dump(dict(sections, model={"seq_length": 1024}), f)
            c = stepsim.simulate(path, hf_config=hf).summary
            self.assertEqual(c["step_time_s"], want["step_time_s"])
            with self.assertRaises(stepsim.InputError) as e:
                stepsim.simulate(path, hf_config={"model_type": "gpt2"})
            self.assertEqual(e.exception.key, "hf_config")

    def test_megatron_args(self):
        args = ("--num-layers 8 --hidden-size 4096 --num-attention-heads 32 --seq-length 2048 "
                "--max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 48 "
                "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --bf16 --use-distributed-optimizer")
        cluster = os.path.join(ROOT, "examples", "clusters", "h800-96.yaml")
        want = cli_json("simulate", "--megatron-args", args, "--cluster", cluster, "--quiet")
        self.assertEqual(stepsim.simulate(args, cluster=cluster).summary["step_time_s"], want["step_time_s"])
        self.assertEqual(stepsim.simulate(megatron_args=args, cluster=cluster).summary["step_time_s"],
                         want["step_time_s"])
        import yaml
        with open(cluster) as f:
            cdict = yaml.safe_load(f)
        self.assertEqual(stepsim.simulate(args, cluster=cdict).summary["step_time_s"], want["step_time_s"])
        msg = cli_error("simulate", "--megatron-args", "--num-layers 96 --hidden-size x", "--cluster", cluster)
        with self.assertRaises(stepsim.InputError) as e:
            stepsim.simulate("--num-layers 96 --hidden-size x", cluster=cluster)
        self.assertEqual(str(e.exception), msg)

    def test_torchtitan_and_deepspeed_configs(self):
        # The same jobs as `stepsim simulate --torchtitan-config/--deepspeed-config ... --cluster`, bit for bit.
        tt = os.path.join(ROOT, "examples", "torchtitan", "llama3-8b-float8.toml")
        h100 = os.path.join(ROOT, "examples", "clusters", "h100-1024.yaml")
        want = cli_json("simulate", "--torchtitan-config", tt, "--cluster", h100, "--set", "cluster.num_gpus=8",
                        "--quiet")
        got = stepsim.simulate(torchtitan_config=tt, cluster=h100, overrides={"cluster.num_gpus": 8})
        self.assertEqual(got.step_time_s, want["step_time_s"])
        ds = os.path.join(ROOT, "examples", "deepspeed", "llama2-7b-zero3.json")
        hf = os.path.join(ROOT, "examples", "deepspeed", "llama-2-7b-config.json")
        a800 = os.path.join(ROOT, "examples", "deepspeed", "dgx-a800.yaml")
        want = cli_json("simulate", "--deepspeed-config", ds, "--hf-config", hf, "--cluster", a800, "--quiet")
        got = stepsim.simulate(deepspeed_config=ds, hf_config=hf, cluster=a800)
        self.assertEqual(got.step_time_s, want["step_time_s"])
        with open(hf) as f:
            self.assertEqual(stepsim.simulate(deepspeed_config=ds, hf_config=json.load(f), cluster=a800).step_time_s,
                             want["step_time_s"])
        # The properties the repr shows.
        self.assertEqual(got.mfu, want["mfu"])
        self.assertEqual(got.fits, want["fits"])
        self.assertIn("mfu=%r" % got.mfu, repr(got))
        with self.assertRaises(stepsim.InputError):
            stepsim.simulate(deepspeed_config=ds, hf_config=hf)  # no cluster
        with self.assertRaises(stepsim.InputError):
            stepsim.simulate(JOB, deepspeed_config=ds, hf_config=hf, cluster=a800)

    def test_memory_series_breakdown_and_pandas(self):
        with tempfile.TemporaryDirectory() as d:
            csv = os.path.join(d, "m.csv")
            cli("simulate", JOB, "--quiet", "--set", "model.num_layers=8", "--set", "parallelism.pipeline=2",
                "--set", "parallelism.data=4", "--memory-csv", csv)
            with open(csv) as f:
                lines = f.read().splitlines()[1:]
        r = stepsim.simulate(JOB, overrides={"model.num_layers": 8, "parallelism.pipeline": 2, "parallelism.data": 4})
        # One series per recorded rank: rank 0 and one rank per stage (rank 0 is stage 0's)
        self.assertEqual(sorted({s["rank"] for s in r.memory_series}), [0, 4])
        mem = r.to_pandas("memory")
        self.assertEqual(list(mem.columns), ["rank", "time_s", "allocated_bytes"])
        self.assertEqual(len(mem), len(lines))  # as many rows as --memory-csv writes
        rank, t, b = lines[-1].split(",")
        self.assertEqual((int(mem.iloc[-1]["rank"]), int(mem.iloc[-1]["allocated_bytes"])), (int(rank), int(b)))
        self.assertAlmostEqual(mem.iloc[-1]["time_s"], float(t), places=9)
        self.assertEqual(int(mem["allocated_bytes"].max()), r.summary["memory"]["peak_bytes_max"])

        parts = {p["part"]: p["seconds"] for p in r.breakdown}
        self.assertEqual(parts["compute"], r.summary["breakdown_s"]["compute"])
        self.assertEqual(parts["exposed_comm.pp"], r.summary["breakdown_s"]["exposed_comm"]["pp"])
        self.assertEqual(len(r.to_pandas("breakdown")), len(r.breakdown))

        raw = r.to_pandas("raw")  # the JSON's keys dotted, its units
        self.assertEqual(len(raw), 1)
        self.assertEqual(raw.iloc[0]["step_time_s"], r.summary["step_time_s"])
        self.assertEqual(raw.iloc[0]["memory.peak_bytes_max"], r.summary["memory"]["peak_bytes_max"])

        # The default: units in the column names, values in them (GiB = 2**30 bytes, ms, %).
        df = r.to_pandas()
        self.assertEqual(len(df), 1)
        row = df.iloc[0]
        mem, bd = r.summary["memory"], r.summary["breakdown_s"]
        self.assertEqual(row["step time (s)"], r.summary["step_time_s"])
        self.assertAlmostEqual(row["peak memory (GiB)"], mem["peak_bytes_max"] / 2**30, places=9)
        self.assertAlmostEqual(row["GPU memory (GiB)"], 80.0, places=9)  # an H100-SXM's 80 GiB
        self.assertAlmostEqual(row["MFU (%)"], 100 * r.summary["mfu"], places=9)
        self.assertAlmostEqual(row["exposed DP comm (ms)"], 1e3 * bd["exposed_comm"]["dp"], places=9)
        self.assertAlmostEqual(row["stage 1 peak (GiB)"], mem["per_stage"][1]["peak_bytes"] / 2**30, places=9)
        self.assertAlmostEqual(row["DP comm volume per rank (GiB)"],
                               r.summary["comm_volume_bytes_per_rank"]["dp"] / 2**30, places=9)
        self.assertEqual(row["micro-batches"], r.summary["num_microbatches"])
        self.assertEqual(df.columns[0], "step time (s)")  # the headline first
        # No raw JSON name is left: no dotted keys, no byte counts, no seconds spelt _s.
        self.assertFalse([c for c in df.columns if "." in c or "bytes" in c or c.endswith("_s")], list(df.columns))
        # Every field of the summary is in it: the raw form's columns, with the lists (the step's interval, the
        # stages) spread over columns of their own: low and high; for each of the 2 stages 8 memory figures
        # (peak, static, activations, allocated, reserved, stream pools, out of memory, tight) and 12 of time
        # (layers, busy, compute, bubble, optimizer,
        # host gaps and the 6 groups' exposed comm).
        lists = [c for c in raw.columns if isinstance(raw.iloc[0][c], list)]
        self.assertEqual(sorted(lists), ["memory.per_stage", "pipeline_stages", "step_time_interval_s"])
        self.assertEqual(len(df.columns), len(raw.columns) - len(lists) + 2 + 2 * 8 + 2 * 12)

        # The readable table: units in the names, GiB, % and ms, the same figures.
        t = r.to_pandas("table")
        self.assertEqual(len(t), 1)
        self.assertEqual(t.iloc[0]["step time (s)"], r.summary["step_time_s"])
        self.assertAlmostEqual(t.iloc[0]["MFU (%)"], 100 * r.mfu, places=9)
        self.assertAlmostEqual(t.iloc[0]["peak memory (GiB)"], r.summary["memory"]["peak_bytes_max"] / 2**30, places=9)
        self.assertAlmostEqual(t.iloc[0]["exposed PP comm (ms)"], 1e3 * parts["exposed_comm.pp"], places=9)
        plain = ("tokens/s", "TFLOP/s per GPU", "fits", "tight in memory")
        self.assertTrue(all("(" in c or c in plain for c in t.columns), list(t.columns))
        self.assertEqual(bool(t.iloc[0]["tight in memory"]), r.memory_tight)
        self.assertFalse(r.memory_tight)  # 14.3 GiB of 80 on the small job: fits with room
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            with self.assertRaises(ImportError) as e:
                r.plot()
            self.assertIn("needs matplotlib", str(e.exception))

    def test_outputs_written_like_the_cli(self):
        with tempfile.TemporaryDirectory() as d:
            js, tr = os.path.join(d, "s.json"), os.path.join(d, "t.trace.json")
            r = stepsim.simulate(JOB, overrides=SMALL, json=js, trace=tr)
            with open(js) as f:
                self.assertEqual(json.load(f)["step_time_s"], r.step_time_s)
            with open(tr) as f:
                # The trace writes seconds at nanosecond resolution (9 decimals), the summary JSON round-trips.
                self.assertAlmostEqual(json.load(f)["otherData"]["step_time_s"], r.step_time_s, places=9)
            dumped = os.path.join(d, "job.yaml")
            stepsim.simulate(JOB, overrides=SMALL, dump_job=dumped)
            self.assertEqual(stepsim.simulate(dumped).step_time_s, r.step_time_s)

    def test_every_summary_field_is_an_attribute(self):
        want = cli_json("simulate", JOB, "--quiet", *sets(SMALL + ["parallelism.pipeline=2", "parallelism.data=4"]))
        r = stepsim.simulate(JOB, overrides=SMALL + ["parallelism.pipeline=2", "parallelism.data=4"])
        for key, value in want.items():
            self.assertIn(key, dir(r))
            if key != "simulation":  # its wall_s is the engine's own run time
                self.assertEqual(getattr(r, key), value, key)
        self.assertEqual(r.simulation.ranks, 8)
        self.assertEqual(r.memory.per_stage[1].peak_bytes, want["memory"]["per_stage"][1]["peak_bytes"])
        self.assertEqual(r.breakdown_s.exposed_comm.pp, want["breakdown_s"]["exposed_comm"]["pp"])
        self.assertEqual(r.comm_calls_per_rank.dp, want["comm_calls_per_rank"]["dp"])
        self.assertEqual(r.num_microbatches, 32 // 4)  # global batch 32 over DP 4, micro-batch 1
        self.assertEqual(r.peak_bytes, want["memory"]["peak_bytes_max"])
        self.assertAlmostEqual(r.peak_memory_gib, want["memory"]["peak_bytes_max"] / 2**30, places=12)
        self.assertEqual(r.gpu_memory_gib, 80.0)
        # Fields this job leaves out are there all the same: None, or [] for the notes.
        self.assertIsNone(r.power_limit_W)
        self.assertEqual(r.assumptions, [])
        self.assertLess(len(repr(r)), 120)
        with self.assertRaises(AttributeError):
            r.no_such_field  # noqa: B018

    def test_threads_run_at_once_with_the_same_numbers(self):
        want = stepsim.simulate(JOB, overrides=SMALL).step_time_s
        got = []
        ts = [threading.Thread(target=lambda: got.append(stepsim.simulate(JOB, overrides=SMALL).step_time_s))
              for _ in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(got, [want] * 3)


class InputErrorTest(unittest.TestCase):
    def check_same_as_cli(self, overrides, key):
        msg = cli_error("simulate", JOB, *sets(overrides))
        with self.assertRaises(stepsim.InputError) as e:
            stepsim.simulate(JOB, overrides=overrides)
        self.assertEqual(str(e.exception), msg)  # the CLI's exit-2 line
        self.assertEqual(e.exception.key, key)
        self.assertTrue(e.exception.rule)
        self.assertIsInstance(e.exception, ValueError)
        return e.exception

    def test_misspelt_key(self):
        e = self.check_same_as_cli(["model.hidden_sizee=4096"], "model.hidden_sizee")
        self.assertEqual(e.rule, "unknown key (did you mean model.hidden_size?)")

    def test_the_file_is_named(self):
        with open(JOB) as f:
            text = f.read()
        self.assertIn("gpu: H100-SXM", text)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "z9000.yaml")
            with open(path, "w") as f:
                f.write(text.replace("gpu: H100-SXM", "gpu: Z9000"))
            with self.assertRaises(stepsim.InputError) as j:
                stepsim.simulate(path)
        self.assertEqual((j.exception.file, j.exception.key), (path, "cluster.gpu"))
        with self.assertRaises(stepsim.InputError) as d:
            stepsim.simulate({"model": {"num_layers": "many"}})
        self.assertEqual(d.exception.file, "job dict")  # no file: the message's name for a job given as a dict
        with self.assertRaises(stepsim.InputError) as v:
            stepsim.validate("/nonexistent/runs.csv")
        self.assertEqual(v.exception.file, "/nonexistent/runs.csv")
        self.assertEqual(v.exception.key, "runs")

    def raised(self, call):
        with self.assertRaises(stepsim.InputError) as e:
            call()
        for attr in ("file", "key", "rule"):
            self.assertIsInstance(getattr(e.exception, attr), str, attr)
        return e.exception

    def test_file_key_and_rule_are_always_set(self):
        # An override: the source is overrides= (the message's --set), the key the one it names.
        e = self.raised(lambda: stepsim.simulate(JOB, overrides={"model.hidden_sizee": 4096}))
        self.assertEqual((e.file, e.key), ("overrides", "model.hidden_sizee"))
        self.assertEqual(e.rule, "unknown key (did you mean model.hidden_size?)")
        e = self.raised(lambda: stepsim.simulate(JOB, overrides=["model.hidden_size"]))  # no '='
        self.assertEqual((e.file, e.key), ("overrides", "--set"))
        self.assertIn("key=value", e.rule)
        # A file that cannot be read, or is of another kind: the argument that named it is the key.
        missing = "/nonexistent/job.yaml"
        e = self.raised(lambda: stepsim.simulate(missing))
        self.assertEqual((e.file, e.key), (missing, "job"))
        self.assertFalse(e.rule.startswith(missing), e.rule)  # the rule is without the file in front
        hf = os.path.join(ROOT, "tests", "data", "hf", "gpt2.json")
        e = self.raised(lambda: stepsim.simulate(hf))
        self.assertEqual((e.file, e.key), (hf, "job"))
        self.assertIn("Hugging Face", e.rule)
        toml = os.path.join(ROOT, "examples", "torchtitan", "llama3-8b-float8.toml")
        e = self.raised(lambda: stepsim.simulate(toml))
        self.assertEqual((e.file, e.key), (toml, "job"))
        self.assertIn("TOML", e.rule)
        h100 = os.path.join(ROOT, "examples", "clusters", "h100-1024.yaml")
        e = self.raised(lambda: stepsim.simulate(torchtitan_config="/nonexistent.toml", cluster=h100))
        self.assertEqual((e.file, e.key), ("/nonexistent.toml", "torchtitan_config"))
        e = self.raised(lambda: stepsim.profile_nccl("/nonexistent.log"))
        self.assertEqual((e.file, e.key), ("/nonexistent.log", "log"))
        # A what-if side's file: the path alone.
        e = self.raised(lambda: stepsim.whatif(JOB, to={"model.hidden_sizee": 1}))
        self.assertEqual((e.file, e.key), (JOB, "model.hidden_sizee"))
        # An option: no file; the key is the CLI option, or the Python keyword argument where only Python has it.
        e = self.raised(lambda: stepsim.simulate(JOB, rank=10**6))
        self.assertEqual((e.file, e.key, e.rule), ("", "--rank", "must be in 0..7"))
        e = self.raised(lambda: stepsim.reliability(step_time=1.0, nodes=4, save_time=10.0))
        self.assertEqual((e.file, e.key), ("", "--steps"))
        e = self.raised(lambda: stepsim.whatif(JOB, tokens=1e9, steps=4))
        self.assertEqual((e.file, e.key), ("", "tokens"))
        e = self.raised(lambda: stepsim.plan(JOB, fix="tensor=2"))
        self.assertEqual((e.file, e.key), ("", "fix"))
        e = self.raised(lambda: stepsim.simulate(42))
        self.assertEqual((e.file, e.key), ("", "job"))
        e = self.raised(lambda: stepsim.simulate(megatron_args="--num-layers 8", hf_config=hf))
        self.assertEqual(e.key, "megatron_args")
        e = self.raised(lambda: stepsim.simulate("--num-layers 8"))  # a Megatron string needs a cluster
        self.assertEqual((e.file, e.key), ("", "cluster"))
        # The Megatron string: its flag is the key.
        cluster = os.path.join(ROOT, "examples", "clusters", "h800-96.yaml")
        e = self.raised(lambda: stepsim.simulate("--num-layers 96 --hidden-size x", cluster=cluster))
        self.assertEqual((e.file, e.key), ("megatron_args", "--hidden-size"))
        e = self.raised(lambda: stepsim.simulate("--num-layer 96", cluster=cluster))
        self.assertEqual((e.file, e.key), ("megatron_args", "--num-layer"))
        self.assertIn("did you mean --num-layers", e.rule)

    def test_unknown_gpu_names_its_key(self):
        e = self.check_same_as_cli(["cluster.gpu=Z9000"], "cluster.gpu")
        self.assertTrue(e.rule.startswith("unknown GPU 'Z9000'; known: "), e.rule)

    def test_invalid_value(self):
        e = self.check_same_as_cli(["parallelism.tensor=3"], "parallelism")  # a rule across the section's keys
        self.assertIn("does not equal cluster.num_gpus 8", e.rule)
        self.check_same_as_cli(["training.precision=fp12"], "training.precision")

    def test_bad_inputs_raise_never_crash(self):
        for bad in (lambda: stepsim.simulate("/nonexistent/job.yaml"),
                    lambda: stepsim.simulate({"model": {"num_layers": "many"}}),
                    lambda: stepsim.simulate(42),
                    lambda: stepsim.simulate(),
                    lambda: stepsim.simulate(JOB, rank=10**6),
                    lambda: stepsim.simulate(JOB, workload="/nonexistent"),
                    lambda: stepsim.whatif(JOB, scale={"no_such_key": 2}),
                    lambda: stepsim.reliability(step_time=1.0, nodes=4, save_time=10.0),
                    lambda: stepsim.comm("all_sum"),
                    lambda: stepsim.comm(sizes="1X"),
                    lambda: stepsim.plan(JOB, objective="fastest"),
                    lambda: stepsim.validate("/nonexistent.csv"),
                    lambda: stepsim.profile_nccl("/nonexistent.log")):
            with self.assertRaises(stepsim.InputError):
                bad()
        with self.assertRaises(TypeError):
            stepsim.simulate(JOB, no_such_option=1)


class CommandsTest(unittest.TestCase):
    def test_memory(self):
        self.assertEqual(stepsim.memory(JOB, overrides=SMALL), cli_json("memory", JOB, *sets(SMALL)))

    def test_whatif(self):
        want = cli_json("whatif", JOB, *sets(SMALL), "--scale", "num_gpus=2", "--scale", "inter_node_bandwidth=2",
                        "--steps", "5000", "--price", "2.5")
        got = stepsim.whatif(JOB, overrides=SMALL, scale={"num_gpus": 2, "inter_node_bandwidth": 2}, steps=5000,
                             price=2.5)
        self.assertEqual(got, want)
        self.assertEqual(got["after"]["gpus"], 16)
        # Typed: attributes for the fields, dict access as before.
        self.assertIsInstance(got, stepsim.WhatIfResult)
        self.assertIsInstance(got, dict)
        self.assertEqual(got.after.gpus, 16)
        self.assertEqual(got.before.step_time_s, want["before"]["step_time_s"])
        self.assertEqual(got.speedup, want["before"]["step_time_s"] / want["after"]["step_time_s"])
        self.assertEqual(got.scales[0].key, want["scales"][0]["key"])
        self.assertIn("WhatIfResult", repr(got))

    def test_whatif_to_and_tokens(self):
        want = cli_json("whatif", JOB, *sets(SMALL), "--to", "cluster.gpu=H200", "--tokens", "1e9")
        got = stepsim.whatif(JOB, overrides=SMALL, to={"cluster.gpu": "H200"}, tokens=1e9)
        self.assertEqual(got, want)
        self.assertEqual(got.after.gpu, "H200")
        self.assertEqual(got.before.gpu, "H100-SXM")
        # 1e9 tokens at 32 sequences of 4096 tokens per step (the job's global batch and sequence)
        self.assertEqual(got.before.steps, int(-(-1e9 // (32 * 4096))))
        self.assertEqual(stepsim.whatif(JOB, overrides=SMALL, to=["cluster.gpu=H200"], tokens=1e9), want)

    def test_reliability(self):
        want = cli_json("reliability", JOB, *sets(SMALL), "--steps", "20000", "--monte-carlo", "50", "--seed", "7")
        got = stepsim.reliability(JOB, overrides=SMALL, steps=20000, monte_carlo=50, seed=7)
        self.assertEqual(got, want)
        self.assertEqual(got["inputs"]["step_time_source"], "simulated")
        self.assertIsInstance(got, stepsim.ReliabilityResult)
        self.assertEqual(got.ettr, want["ettr"])
        self.assertEqual(got.inputs.steps, 20000)
        self.assertEqual(got.e2e_breakdown_s.training, want["e2e_breakdown_s"]["training"])
        self.assertEqual(got.e2e_time_h, want["e2e_time_s"] / 3600)
        tokens = stepsim.reliability(JOB, overrides=SMALL, tokens=32 * 4096 * 1000)  # 1,000 steps of the batch
        self.assertEqual(tokens.inputs.steps, 1000)
        self.assertEqual(tokens, cli_json("reliability", JOB, *sets(SMALL), "--tokens", str(32 * 4096 * 1000)))
        no_job = stepsim.reliability(steps=1000, step_time=2.0, nodes=128, save_time=30.0)
        self.assertEqual(no_job, cli_json("reliability", "--steps", "1000", "--step-time", "2", "--nodes", "128",
                                          "--save-time", "30"))

    def test_plan(self):
        args = ("--top", "3", "--simulate", "1", "--threads", "2")
        want = cli_json("plan", JOB, *sets(SMALL), *args)
        plans = stepsim.plan(JOB, overrides=SMALL, top=3, simulate=1, threads=2)
        self.assertEqual(plans.json, want)
        self.assertEqual(list(plans), want["plans"])
        # Typed: the document's fields as attributes, each plan a Plan with its keys as attributes.
        self.assertIsInstance(plans, stepsim.PlanResult)
        self.assertEqual((plans.gpus, plans.enumerated), (want["gpus"], want["enumerated"]))
        self.assertEqual(plans.baseline, want["baseline"])
        self.assertIs(plans.best, plans[0])
        self.assertEqual(plans[0].tensor * plans[0].pipeline * plans[0].data * plans[0].context, 8)
        self.assertEqual(plans[0].peak_memory_gib, want["plans"][0]["peak_memory_bytes"] / 2**30)
        self.assertIn("gpus", dir(plans))
        self.assertEqual(len(plans.to_pandas()), len(want["plans"]))
        self.assertIn("engine", [p["timed_by"] for p in plans])  # ties may put an estimated plan first
        self.assertTrue(all(p["tie_group"] >= 1 for p in plans))
        untied = stepsim.plan(JOB, overrides=SMALL, top=3, simulate=1, threads=2, tie_tolerance=0)
        self.assertEqual(untied[0]["timed_by"], "engine")
        fp8 = SMALL + ["training.precision=fp8"]
        want = cli_json("plan", JOB, *sets(fp8), "--fp8-recipes", "all", "--top", "4", "--simulate", "0")
        got = stepsim.plan(JOB, overrides=fp8, fp8_recipes="all", top=4, simulate=0)
        self.assertEqual(got.json, want)
        self.assertTrue(all(p["fp8_recipe"] for p in got))
        # the space's constraints as --fix / --allow / --exclude take them
        want = cli_json("plan", JOB, *sets(SMALL), "--fix", "tensor=2", "--allow", "zero_stage=1,3", "--exclude",
                        "tp_comm_overlap", "--top", "5", "--simulate", "0")
        got = stepsim.plan(JOB, overrides=SMALL, fix={"tensor": 2}, allow={"zero_stage": [1, 3]},
                           exclude=["tp_comm_overlap"], top=5, simulate=0)
        self.assertEqual(got.json, want)
        self.assertEqual(got.json["constraints"], "tensor=2; zero_stage in {1,3}; not tp_comm_overlap=true")
        self.assertTrue(all(p["tensor"] == 2 and p["zero_stage"] in (1, 3) and not p["tp_comm_overlap"] for p in got))
        with self.assertRaises(stepsim.InputError):
            stepsim.plan(JOB, overrides=SMALL, fix="tensor=2")
        # the memory map as --csv writes it
        with tempfile.TemporaryDirectory() as d:
            csv = os.path.join(d, "map.csv")
            cli("plan", JOB, *sets(SMALL), "--memory-map", "--csv", csv)
            with open(csv) as f:
                rows = f.read().splitlines()
        m = stepsim.plan(JOB, overrides=SMALL, memory_map=True)
        self.assertEqual(len(m), len(rows) - 1)
        self.assertEqual(list(m[0].keys()), rows[0].split(","))

    def test_plan_framework_nvlink_and_tokens(self):
        args = ("--top", "4", "--simulate", "0")
        want = cli_json("plan", JOB, *sets(SMALL), "--framework", "torchtitan", *args)
        got = stepsim.plan(JOB, overrides=SMALL, framework="torchtitan", top=4, simulate=0)
        self.assertEqual(got.json, want)
        self.assertEqual(got.framework, "torchtitan")
        want = cli_json("plan", JOB, *sets(SMALL), "--max-tp-per-nvlink-domain", "2", *args)
        got = stepsim.plan(JOB, overrides=SMALL, max_tp_per_nvlink_domain=2, top=4, simulate=0)
        self.assertEqual(got.json, want)
        self.assertTrue(got and all(p.tensor <= 2 for p in got))
        e2e = ("--objective", "e2e", "--tokens", "1e9")
        want = cli_json("plan", JOB, *sets(SMALL), *e2e, *args)
        got = stepsim.plan(JOB, overrides=SMALL, objective="e2e", tokens=1e9, top=4, simulate=0)
        self.assertEqual(got.json, want)
        self.assertEqual(got.objective, "e2e")

    def test_comm(self):
        args = ("--collective", "all_gather", "--gpus", "16", "--sizes", "1M-64M", "--model", "nccl", "--store", "none")
        want = cli_json("comm", *args)
        got = stepsim.comm("all_gather", gpus=16, sizes="1M-64M", model="nccl", store="none")
        self.assertEqual(list(got), want)
        self.assertEqual(len(got), 7)
        self.assertEqual(list(got.to_pandas()["size_bytes"]), [2**20 << k for k in range(7)])
        got = stepsim.comm(gpus=16, sizes="8M", overrides={"cluster.inter_node.bandwidth_Gbps": 200},
                           model="alpha-beta")
        self.assertEqual(list(got), cli_json("comm", "--gpus", "16", "--sizes", "8M", "--model", "alpha-beta",
                                             "--set", "cluster.inter_node.bandwidth_Gbps=200"))
        got = stepsim.comm(sizes="1G", algo="ring", proto="LL128", store="none")
        self.assertEqual(list(got), cli_json("comm", "--sizes", "1G", "--algo", "ring", "--proto", "LL128",
                                             "--store", "none"))
        self.assertEqual(got[0]["protocol"], "LL128")
        with self.assertRaises(stepsim.InputError):
            stepsim.comm(proto="LL", model="alpha-beta")

    def test_validate(self):
        runs = os.path.join(SHARED, "data", "published-runs", "published_runs.csv")
        if not os.path.exists(runs):
            self.skipTest("needs " + runs)
        want = cli_json("validate", runs, "--only", "NAR21-T1-01")
        got = stepsim.validate(runs, only=["NAR21-T1-01"])
        self.assertEqual(got, want)
        self.assertEqual(len(got["rows"]), 1)

    def test_profile_nccl(self):
        log = os.path.join(SHARED, "data", "real", "nccl-logs", "pytorch-torchtitan-issue-1369.log")
        if not os.path.exists(log):
            self.skipTest("needs " + log)
        want = cli_json("profile", "nccl", "--log", log, "--quiet", flag="--summary")
        got = stepsim.profile_nccl(log)
        self.assertEqual(got, want)
        self.assertEqual(got["ops_by_type"]["AllGather"], 3)


class ExamplesTest(unittest.TestCase):
    def run_example(self, name, *args):
        env = dict(os.environ)
        r = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "examples", "python", name), *args],
                           capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r.stdout

    def test_sweep_tp_pp(self):
        out = self.run_example("sweep_tp_pp.py")
        self.assertIn("fastest: TP", out)
        best = stepsim.simulate(JOB, overrides=SMALL)  # TP 1, PP 1 is one row of the sweep
        self.assertIn("%.4f" % best.step_time_s, out)

    def test_plan_then_whatif(self):
        out = self.run_example("plan_then_whatif.py")
        self.assertIn("adopted plan:", out)
        self.assertIn("what if num_gpus x2, global batch x2: 8 -> 16 GPUs", out)


if __name__ == "__main__":
    unittest.main()
