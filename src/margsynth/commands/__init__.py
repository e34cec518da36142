"""Sub-commands of the ``margsynth`` CLI: their parsers in :mod:`margsynth.commands.parsers`
(cheap to import), the work of each in a module of its own (see :mod:`margsynth.cli`)."""
