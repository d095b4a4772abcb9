-- Whether a project may have its code run, asked once per project and remembered.
--
-- Lowering a module runs the file's imports, definitions and assignments, so the server runs
-- nothing until told the project is trusted. The answer is kept in
-- stdpath('data')/torch-mlir-lens/trust.json ({"roots": {"/abs/root": true|false}}), shared by
-- every Neovim of the user; nothing inside a project can grant it.

local compat = require('torch_mlir_lens.compat')
local notify = require('torch_mlir_lens.notify')

local M = {}

local asked = {} -- root → true: prompted in this session (whatever the answer)
local on_change = {} -- listeners: function(root, trusted)

--- The file the answers are kept in.
function M.store_path()
  return vim.fn.stdpath('data') .. '/torch-mlir-lens/trust.json'
end

local function read_store()
  local file = io.open(M.store_path(), 'r')
  if not file then
    return { roots = {} }
  end
  local text = file:read('*a')
  file:close()
  local data = compat.json_decode(text)
  if type(data) ~= 'table' or type(data.roots) ~= 'table' then
    notify.warn(M.store_path() .. ' is not a trust file this plugin wrote: ignored (no project is trusted).')
    return { roots = {} }
  end
  return data
end

local function write_store(data)
  local path = M.store_path()
  vim.fn.mkdir(vim.fn.fnamemodify(path, ':h'), 'p')
  local tmp = path .. '.tmp' .. compat.uv.getpid()
  local file = assert(io.open(tmp, 'w'))
  file:write(compat.json_encode(data))
  file:close()
  assert(compat.uv.fs_rename(tmp, path)) -- atomic: another Neovim never reads half a file
end

--- true / false as answered for `root`, nil when never answered.
---@param root string
---@return boolean|nil
function M.get(root)
  local value = read_store().roots[root]
  if type(value) == 'boolean' then
    return value
  end
  return nil
end

--- Remembers the answer for `root` (nil forgets it) and tells the listeners.
---@param root string
---@param trusted boolean|nil
function M.set(root, trusted)
  local data = read_store()
  data.roots[root] = trusted
  if next(data.roots) == nil then
    data.roots = vim.empty_dict()
  end
  write_store(data)
  for _, listener in ipairs(on_change) do
    listener(root, trusted == true)
  end
end

--- Calls `fn(root, trusted)` whenever an answer changes.
function M.subscribe(fn)
  table.insert(on_change, fn)
end

local CHOICES = { 'Trust this project', 'Do not trust it' }

--- Asks whether to trust `root`, once per session and only while it was never answered.
--- `force`: ask even so (the user asked for the IR of an untrusted project).
---@param root string
---@param force boolean|nil
function M.ask(root, force)
  if M.get(root) ~= nil and not force then
    return
  end
  if asked[root] and not force then
    return
  end
  asked[root] = true
  local prompt = 'Torch-MLIR Lens: trust ' .. root .. '? Lowering a module runs its Python code '
    .. '(imports, definitions, assignments) in a worker process.'
  -- Scheduled: never inside an LSP handler or autocmd, where a blocking prompt misbehaves.
  vim.schedule(function()
    vim.ui.select(CHOICES, { prompt = prompt, kind = 'torch_mlir_lens.trust' }, notify.guarded('Trusting', function(choice)
      if choice == CHOICES[1] then
        M.set(root, true)
        notify.info('trusted ' .. root .. ' (`:TorchMlirUntrust` withdraws it).')
      elseif choice == CHOICES[2] then
        M.set(root, false)
        notify.info('not trusting ' .. root .. ': lenses only, no IR (`:TorchMlirTrust` to trust it).')
      end
      -- Dismissed: nothing remembered; asked again in a later session.
    end))
  end)
end

--- The server refused to run code of `root` (the user asked for IR): ask now if never
--- answered, else say how to trust it.
---@param root string
function M.refused(root)
  local answer = M.get(root)
  if answer == nil then
    M.ask(root, true)
  elseif answer == false then
    notify.warn(root .. ' is not trusted, so none of its code runs: `:TorchMlirTrust` trusts it.')
  end
  -- true: trusted a moment ago, the server has not heard yet; the next request works.
end

return M
