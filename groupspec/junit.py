"""JUnit XML for CI: `groupspec check --junit FILE` and `groupspec prove --junit FILE`.

One testcase per checked property (check) or per proof obligation (prove). A property with a
counterexample is a <failure> whose text is the counterexample; a property that a cut-short run
did not finish checking is an <error> (never a pass); a passed testcase has no child. The file
is written atomically (model.atomic.write_bytes_atomic).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence

from model.atomic import write_bytes_atomic

PASSED, FAILURE, ERROR, SKIPPED = "passed", "failure", "error", "skipped"


@dataclass(frozen=True, slots=True)
class Case:
    classname: str
    name: str
    outcome: str = PASSED
    message: str = ""
    text: str = ""
    seconds: float = 0.0


def to_xml(suite: str, cases: Sequence[Case], seconds: float) -> bytes:
    count = {k: sum(c.outcome == k for c in cases) for k in (FAILURE, ERROR, SKIPPED)}
    root = ET.Element("testsuites", name=suite, tests=str(len(cases)), failures=str(count[FAILURE]),
                      errors=str(count[ERROR]), skipped=str(count[SKIPPED]), time=f"{seconds:.3f}")
    ts = ET.SubElement(root, "testsuite", name=suite, tests=str(len(cases)),
                       failures=str(count[FAILURE]), errors=str(count[ERROR]),
                       skipped=str(count[SKIPPED]), time=f"{seconds:.3f}")
    for c in cases:
        tc = ET.SubElement(ts, "testcase", classname=c.classname, name=c.name, time=f"{c.seconds:.3f}")
        if c.outcome != PASSED:
            child = ET.SubElement(tc, c.outcome, message=c.message[:1000])
            if c.text:
                child.text = c.text
    return bytes(ET.tostring(root, encoding="utf-8", xml_declaration=True))


def write(path: str, suite: str, cases: Sequence[Case], seconds: float) -> None:
    write_bytes_atomic(path, to_xml(suite, cases, seconds))


def check_cases(table: str, checked: Iterable[str], violations: Sequence[Any],
                incomplete: str, unchecked: Optional[dict[str, str]] = None) -> list[Case]:
    """One case per checked property. `violations` have .invariant, .message, .trace; `incomplete`
    says why some run did not explore everything ("" if every run finished); `unchecked` names
    properties some run did not check at all, with the reason."""
    cls = f"groupspec.check.{table}"
    out = []
    for name in sorted(checked):
        vs = [v for v in violations if v.invariant == name]
        if vs:
            text = "\n\n".join(f"{v.message}\n" + "\n".join(v.trace) for v in vs)
            out.append(Case(cls, name, FAILURE, vs[0].message, text))
        elif unchecked and name in unchecked:
            out.append(Case(cls, name, ERROR, f"not checked: {unchecked[name]}"))
        elif incomplete:
            out.append(Case(cls, name, ERROR, f"incomplete: {incomplete}; no counterexample found "
                                              f"in the part explored, but the property is not checked"))
        else:
            out.append(Case(cls, name))
    return out


def prove_cases(report: dict[str, Any]) -> list[Case]:
    """One case per obligation of a `groupspec prove --json` report."""
    cls = f"groupspec.prove.{report.get('table', 'table')}"
    out = []
    wf = report.get("wellformed")
    if isinstance(wf, dict):
        if wf.get("proved"):
            out.append(Case(cls, "well-formedness", seconds=float(wf.get("seconds", 0.0))))
        else:
            findings = [str(f) for f in wf.get("findings", [])]
            out.append(Case(cls, "well-formedness", FAILURE, f"{len(findings)} finding(s)",
                            "\n".join(findings), float(wf.get("seconds", 0.0))))
    for e in report.get("invariants", []):
        name, unb, bmc = str(e["invariant"]), e.get("unbounded"), e.get("bmc")
        secs = float(e.get("seconds", 0.0)) + float(e.get("bmc_seconds", 0.0))
        if bmc == "violated":
            text = "\n".join(e.get("counterexample") or [])
            out.append(Case(cls, name, FAILURE, f"BMC counterexample: {e.get('model_check', '')}",
                            text, secs))
        elif unb == "cti":
            text = "\n".join(e.get("cti") or [])
            out.append(Case(cls, name, FAILURE, f"not inductive: counterexample to induction. "
                                                f"{e.get('message', '')}".strip(), text, secs))
        elif unb == "proved" and bmc == "holds":
            out.append(Case(cls, name, seconds=secs))
        else:
            why = e.get("reason") or e.get("message") or f"induction {unb}, bmc {bmc}"
            out.append(Case(cls, name, ERROR, f"not decided: {why}", "", secs))
    for r in report.get("rows", []) or []:
        name = f"row {r['row']}"
        if r.get("status") == "unknown":
            out.append(Case(cls, name, ERROR, "reachability not decided"))
        else:
            out.append(Case(cls, name))
    return out
