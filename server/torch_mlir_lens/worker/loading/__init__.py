"""Loading user code into the worker: definitions only, and what a job leaves behind undone.

- `loader`: a user's file executed definitions-only, under its real path
- `construct`: the module to lower built, without its weights when nothing needs them
- `hygiene`: what a user's module leaves behind in the worker undone between jobs
- `kept_state`: what a run of the user's forward wrote to the model put back after it
- `import_graph`: which module imported which, for the life of the worker
- `provenance`: what an answer depends on besides the job (for the persistent cache)
- `job_fields`: a job's file read from disk, with an error a user can act on
"""
