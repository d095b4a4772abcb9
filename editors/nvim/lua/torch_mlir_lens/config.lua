-- The plugin's options: defaults, merged with what `setup()` was given.

local M = {}

M.defaults = {
  -- Interpreter that runs the server: a path, or a function(root) returning one. Unset: the
  -- active virtualenv ($VIRTUAL_ENV), else the active conda environment, else `python3`.
  python = nil,
  -- The server's settings (`torchMlirLens.*`, camelCase as in docs/editors.md), e.g.
  -- { defaultTarget = 'tosa', lensTargets = { 'linalg', 'stablehlo' } }.
  settings = {},
  -- Files or folders whose presence marks a project root (one server per root).
  root_markers = { 'pyproject.toml', 'setup.py', 'setup.cfg', '.git' },
  -- File types the server is started for.
  filetypes = { 'python' },
  -- Ask once per project, when a file of it holds a module, whether to trust it.
  ask_trust = true,
  -- Where `:TorchMlirShow` opens the IR: 'vsplit' (right) or 'split' (below).
  split = 'vsplit',
  -- Extra environment of the server process.
  cmd_env = nil,
}

M.options = vim.deepcopy(M.defaults)

--- Merges `opts` over the defaults (a later `setup()` starts from the defaults again).
---@param opts table|nil
function M.set(opts)
  opts = opts or {}
  local merged = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts)
  -- Lists replace, not merge: { 'python' } over { 'python', 'x' } must stay { 'python' }.
  for _, key in ipairs({ 'root_markers', 'filetypes' }) do
    if opts[key] ~= nil then
      merged[key] = opts[key]
    end
  end
  if opts.settings ~= nil then
    merged.settings = vim.deepcopy(opts.settings)
  end
  M.options = merged
end

-- Settings whose value is a JSON object: an empty Lua table would go out as `[]`.
local OBJECT_SETTINGS = { 'exampleInputs', 'pipelines' }

--- The server's settings as a JSON object (never `[]`).
function M.settings()
  local settings = vim.deepcopy(M.options.settings or {})
  for _, key in ipairs(OBJECT_SETTINGS) do
    if type(settings[key]) == 'table' and next(settings[key]) == nil then
      settings[key] = vim.empty_dict()
    end
  end
  if next(settings) == nil then
    return vim.empty_dict()
  end
  return settings
end

--- The settings as `workspace/configuration` and `didChangeConfiguration` carry them.
function M.section()
  return { torchMlirLens = M.settings() }
end

return M
