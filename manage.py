#!/usr/bin/env python
"""Django's command-line utility for dws: every command validates the configuration first."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dws_project.settings")
    from django.core.management import execute_from_command_line

    from dws_project.startup import boot_management_command

    boot_management_command(sys.argv)
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
