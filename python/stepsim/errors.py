"""stepsim.InputError: bad input to the library (a job key, an option, a file), as the CLI's exit-2 message."""
import re

# The library names a job key as "key model.hidden_size: <rule>" (after the file name, when there is one).
_KEY = re.compile(r"\bkey ([A-Za-z0-9_.\[\]-]+): (.*)$", re.S)
# A key the schema does not have: "unknown key model.hidden_sizee" (the rule is the message's own words).
_UNKNOWN = re.compile(r"\b(unknown key) ([A-Za-z0-9_.\[\]-]+)(.*)$", re.S)
# A Megatron flag the parser does not know: "unknown argument --num-layer (did you mean --num-layers?)".
_UNKNOWN_FLAG = re.compile(r"^(unknown argument) (--[A-Za-z0-9-]+)(.*)$", re.S)
# An option as "--flag value: <rule>", "--flag: <rule>" or "--flag <rule without a colon>".
_OPTION = re.compile(r"^(--[A-Za-z0-9-]+)(?:[^:]*: | )(.*)$", re.S)
# A keyword argument of the Python call: "tokens= gives the steps of each side; ...".
_KEYWORD = re.compile(r"^([a-z_]+)= (.*)$", re.S)
# The file a message is about comes first: "examples/job.yaml: key ...", "runs.csv: line 3: ...". A what-if side may
# follow the path ("job.yaml (after): ..."): the path alone is the file.
_FILE = re.compile(r"^([^\s:][^:\n]*?\.[A-Za-z0-9]{1,8}|/[^:\n]*?|[^\s:][^:\n]*/[^:\n]*?)"
                   r"(?: \((?:before|after)\))?: (.*)$", re.S)
# Inputs that are no file but that the library names first like one: a job given as a dict, the Megatron string.
_SOURCES = {"job dict": "job dict", "megatron-args": "megatron_args"}
# An override's message starts with its `--set key=value`: the source is the overrides= argument.
_SET = re.compile(r"^--set ([^:]*?): (.*)$", re.S)


class InputError(ValueError):
    """Bad input. str(e) is the line the CLI prints after "stepsim: error: " (exit 2). Three attributes say what it is
    about, always strings (docs/PYTHON.md, "Errors"):

    file  the file it names first (the path as given); "overrides" for an override (the message's ``--set``);
          "job dict" for a job given as a dict; "megatron_args" for a Megatron argument string; "" when the input
          was no file (an option, a keyword argument).
    key   the job key (``model.hidden_size``), the CLI option (``--steps``) or the keyword argument (``tokens``) it
          names; for a file that cannot be read or is of the wrong kind, the argument that named the file (``job``,
          ``runs``, ``torchtitan_config``, ...); "" only when it names none.
    rule  what was wrong, the message without the file and key in front of it.
    """

    def __init__(self, message, *, file=None, key=None, rule=None):
        super().__init__(message)
        self.message = message
        self.file, self.key, self.rule = _parse(message)
        # The Python side knows some of them better than the message's words (api.py passes them).
        if file is not None:
            self.file = file
        if key is not None:
            self.key = key
        if rule is not None:
            self.rule = rule


def _parse(message):
    """(file, key, rule) of a library message; "" where the message names none."""
    file, rest = "", message
    s = _SET.match(message)
    f = _FILE.match(message)
    if s:
        # "--set model.x=1: unknown key model.x": the key is the one the rule names, else the override's own key.
        file, rest = "overrides", s.group(2)
        given = s.group(1).split("=", 1)[0] if "=" in s.group(1) else ""
    elif f:
        file, rest = f.group(1), f.group(2)
        given = ""
    else:
        given = ""
        for words, name in _SOURCES.items():
            if message.startswith(words + ": "):
                file, rest = name, message[len(words) + 2:]
                break
    m, u, uf = _KEY.search(rest), _UNKNOWN.search(rest), _UNKNOWN_FLAG.match(rest)
    if m:
        return file, m.group(1), m.group(2)
    if u:
        return file, u.group(2), (u.group(1) + u.group(3)).strip()
    if uf:
        return file, uf.group(2), (uf.group(1) + uf.group(3)).strip()
    if s:
        # An override that is not key=value names no key: the option that carried it is the key.
        return file, given or "--set", rest
    o = _OPTION.match(rest)
    if o:
        return file, o.group(1), o.group(2)
    k = _KEYWORD.match(rest)
    if k:
        return file, k.group(1), k.group(2)
    return file, "", rest
