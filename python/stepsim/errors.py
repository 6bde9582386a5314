"""stepsim.InputError: bad input to the library (a job key, an option, a file), as the CLI's exit-2 message."""
import re

# The library names a job key as "key model.hidden_size: <rule>" (after the file name, when there is one).
_KEY = re.compile(r"\bkey ([A-Za-z0-9_.\[\]-]+): (.*)$", re.S)
# A key the schema does not have: "unknown key model.hidden_sizee" (the rule is the message's own words).
_UNKNOWN = re.compile(r"\b(unknown key) ([A-Za-z0-9_.\[\]-]+)(.*)$", re.S)
# An option as "--flag value: <rule>" or "--flag: <rule>".
_OPTION = re.compile(r"^(--[A-Za-z0-9-]+)[^:]*: (.*)$", re.S)
# The file a message is about comes first: "examples/job.yaml: key ...", "runs.csv: line 3: ...".
_FILE = re.compile(r"^([^\s:][^:\n]*?\.[A-Za-z0-9]{1,8}|[^\s:][^:\n]*/[^:\n]*): ")


class InputError(ValueError):
    """Bad input. str(e) is the line the CLI prints after "stepsim: error: " (exit 2); ``file`` is the file it names
    first (None when it names none: a job given as a dict, an option), ``key`` the job key or CLI option it names
    (None when it names none) and ``rule`` what was wrong with it. All three are always set."""

    def __init__(self, message):
        super().__init__(message)
        self.message = message
        f = _FILE.match(message)
        self.file = f.group(1) if f else None
        self.key, self.rule = None, message
        # An unknown key is the key, also when a `--set key=value` that wrote it comes first in the message.
        m, u = _KEY.search(message), _UNKNOWN.search(message)
        if m:
            self.key, self.rule = m.group(1), m.group(2)
        elif u:
            self.key, self.rule = u.group(2), (u.group(1) + u.group(3)).strip()
        elif _OPTION.match(message):
            o = _OPTION.match(message)
            self.key, self.rule = o.group(1), o.group(2)
