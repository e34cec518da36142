"""Sub-commands of the ``dpsynth`` CLI, one module each (see ``dpsynth.cli``)."""
