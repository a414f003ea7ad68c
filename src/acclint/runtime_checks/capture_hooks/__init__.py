"""Step 0 recorded without editing the program: `acclint capture -- COMMAND` and the torch global hooks.

    launch          acclint capture's own process: the temporary start-up hook, the command, the exit status
    site_hook       copied as sitecustomize.py for the command's Python processes; hands over on import of torch
    child           inside each such process: record, write, compare, stop
    torch_observer  step 0 from torch's global module, optimizer and backward hooks (also used by the callbacks)
    candidate       a top-level module of step 0: its forward recorder, inputs and initial running statistics
    step_probe      the Probe the hooks fill
    mindspore_model MindSpore: Model.train gets the acclint callback
"""
