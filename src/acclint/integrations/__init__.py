"""Step-0 parity inside the trainers users already run, one line to add each:

    trainer = Trainer(..., callbacks=[acclint.integrations.transformers.AcclintCallback(output="gpu.json")])
    trainer = lightning.Trainer(..., callbacks=[acclint.integrations.lightning.AcclintCallback(output="gpu.json")])
    model.train(1, dataset, callbacks=[acclint.integrations.mindspore.AcclintCallback(output="npu.json")])

Each records the first optimizer step's fingerprint (what `acclint.runtime.Probe` records), writes
it to `output`, and with `reference=` compares it at once (`on_mismatch`: "exit", "warn" or
"raise"). Training goes on unchanged; the torch callbacks leave no hook behind after step 0.
This package imports no trainer library: each module imports its own when it is imported.
"""
