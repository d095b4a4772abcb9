-- The Python that runs the server, and whether it has what the server needs.
--
-- Order: the `python` option (a path, or a function of the project root), the active
-- virtualenv ($VIRTUAL_ENV), the active conda environment ($CONDA_PREFIX), `python3`.
-- Before a start the interpreter is probed once (a short `python -c`, importing nothing
-- heavy): a missing interpreter or package is said plainly instead of a dead client.

local compat = require('torch_mlir_lens.compat')
local config = require('torch_mlir_lens.config')

local M = {}

-- import name → what the message calls it (the VS Code client's list).
local REQUIRED = {
  { 'torch_mlir_lens', 'torch-mlir-lens (the language server)' },
  { 'pygls', 'pygls' },
  { 'torch', 'torch' },
  { 'torch_mlir', 'torch-mlir' },
}
-- Without these the server cannot start at all; without the others it starts but lowers nothing.
local NEEDED_TO_START = { torch_mlir_lens = true, pygls = true }

-- The first line drops the working directory `-c` puts first on sys.path, before anything is
-- imported: a project's own json.py must not run when its interpreter is checked. (Not `-P`:
-- the probe must report its version on interpreters older than 3.11 too.)
local PROBE = [[
import sys; sys.path[:1] == [""] and sys.path.pop(0)
import importlib.util, json
mods = %s
print(json.dumps({"version": list(sys.version_info[:3]),
                  "missing": [m for m in mods if importlib.util.find_spec(m) is None]}))
]]

local checked = {} -- interpreter path → probe result (successful probes only)

--- The interpreter for a project root, and where the choice came from.
---@param root string
---@return string path, string source
function M.choose(root)
  local option = config.options.python
  if type(option) == 'function' then
    option = option(root)
  end
  if type(option) == 'string' and option ~= '' then
    return vim.fn.expand(option), 'the `python` option'
  end
  local venv = vim.env.VIRTUAL_ENV
  if venv and venv ~= '' then
    return venv .. '/bin/python', 'the active virtualenv ($VIRTUAL_ENV)'
  end
  local conda = vim.env.CONDA_PREFIX
  if conda and conda ~= '' then
    return conda .. '/bin/python', 'the active conda environment ($CONDA_PREFIX)'
  end
  return 'python3', 'the default (`python3` on PATH)'
end

local function names(missing)
  local wanted = {}
  for _, m in ipairs(missing) do
    wanted[m] = true
  end
  local out = {}
  for _, entry in ipairs(REQUIRED) do
    if wanted[entry[1]] then
      table.insert(out, entry[2])
    end
  end
  return table.concat(out, ', ')
end

--- Probes `python`: {ok, can_start, problem} where `problem` is one sentence for people.
---@param python string
---@param source string
---@return table
function M.check(python, source)
  if checked[python] then
    return checked[python]
  end
  if vim.fn.executable(python) ~= 1 then
    return {
      ok = false,
      can_start = false,
      problem = string.format('the Python interpreter "%s" (from %s) was not found.', python, source),
    }
  end
  local mods = {}
  for _, entry in ipairs(REQUIRED) do
    table.insert(mods, '"' .. entry[1] .. '"')
  end
  local output = vim.fn.system({ python, '-c', string.format(PROBE, '[' .. table.concat(mods, ', ') .. ']') })
  local last = vim.split(vim.trim(output), '\n')
  local info = vim.v.shell_error == 0 and compat.json_decode(last[#last]) or nil
  if type(info) ~= 'table' or type(info.missing) ~= 'table' then
    return {
      ok = false,
      can_start = false,
      problem = string.format('the Python interpreter "%s" (from %s) could not be run: %s', python, source,
        vim.trim(output):match('[^\n]*$') or ''),
    }
  end
  local result = { ok = true, can_start = true }
  if #info.missing > 0 then
    local version = table.concat(info.version, '.')
    result.ok = false
    for _, m in ipairs(info.missing) do
      if NEEDED_TO_START[m] then
        result.can_start = false
      end
    end
    result.problem = string.format(
      'the Python interpreter "%s" (Python %s, from %s) lacks %s. Install this repository\'s '
        .. 'package into it (`%s -m pip install /path/to/torch-mlir-lens`), or choose another '
        .. 'interpreter with the `python` option%s',
      python, version, source, names(info.missing), python,
      result.can_start and ': until then nothing can be lowered.' or '.'
    )
  end
  if result.ok then
    checked[python] = result
  end
  return result
end

return M
