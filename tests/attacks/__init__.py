"""Red-team cases against the orders example: patches that try to get green without the fix.

`cases.py` holds the case table (files to write on top of the base commit plus the expected
outcome and the layer that should stop it); `lab.py` turns cases into commits and scores them
with the real `patchwarden score`; `tally.py` collects what each driver observed, and the
package's `conftest.py` prints the computed summary line at the end of the session.
See docs/threat-model.md for the attack classes and the layers.
"""
