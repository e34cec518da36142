"""Sub-commands of the ``margsynth`` CLI, one module each (see ``margsynth.cli``)."""
