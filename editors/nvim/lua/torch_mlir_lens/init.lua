-- Torch-MLIR Lens for Neovim (0.7 and later): the language server of this repository for
-- Python buffers, trust asked once per project, lenses kept fresh, and the IR of a module in
-- a split linked line by line to its source. docs/editors.md has the set-up.
--
--   require('torch_mlir_lens').setup({
--     python = nil,        -- interpreter (path or function(root)); default: $VIRTUAL_ENV, python3
--     settings = {},       -- the server's settings, e.g. { defaultTarget = 'tosa' }
--   })

local M = {}

local registered = false

local function each_loaded_buffer(fn)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) then
      fn(buf)
    end
  end
end

-- Commands, autocmds and listeners: once per Neovim, whether from plugin/ or setup().
local function register()
  if registered then
    return
  end
  registered = true
  local client = require('torch_mlir_lens.client')
  local ir_view = require('torch_mlir_lens.ir_view')
  local lenses = require('torch_mlir_lens.lenses')
  local linking = require('torch_mlir_lens.linking')
  local notify = require('torch_mlir_lens.notify')
  local trust = require('torch_mlir_lens.trust')

  require('torch_mlir_lens.commands').register()
  linking.define_highlights()
  trust.subscribe(function(root, trusted)
    client.tell_trust(root, trusted)
  end)

  local group = vim.api.nvim_create_augroup('TorchMlirLens', { clear = true })
  local au = vim.api.nvim_create_autocmd
  au('FileType', {
    group = group,
    callback = notify.guarded('Starting the server', function(args)
      client.ensure(args.buf)
    end),
  })
  au({ 'BufEnter', 'InsertLeave', 'BufWritePost' }, {
    group = group,
    callback = notify.guarded('Refreshing lenses', function(args)
      local entry, lsp_client = client.for_buffer(args.buf)
      if entry and lsp_client and entry.buffers[args.buf] then
        lenses.refresh_soon(lsp_client, args.buf)
      end
    end),
  })
  au('BufWritePost', {
    group = group,
    callback = notify.guarded('Updating the IR', function(args)
      ir_view.reload(vim.uri_from_bufnr(args.buf), linking.redraw)
    end),
  })
  au('CursorMoved', {
    group = group,
    callback = notify.guarded('Linking source and IR', function(args)
      linking.on_cursor(args.buf)
    end),
  })
  au('BufWipeout', {
    group = group,
    callback = function(args)
      ir_view.forget(args.buf)
    end,
  })
  au('ColorScheme', { group = group, callback = linking.define_highlights })
end

--- Configures the plugin (see the top of this file and docs/editors.md) and starts servers
--- for the Python buffers already open. Calling it again replaces the options; running
--- servers get the new settings.
---@param opts table|nil
function M.setup(opts)
  require('torch_mlir_lens.config').set(opts)
  register()
  require('torch_mlir_lens.client').push_settings()
  each_loaded_buffer(function(buf)
    require('torch_mlir_lens.notify').guard('Starting the server', require('torch_mlir_lens.client').ensure, buf)
  end)
end

--- What plugin/ runs at start-up: everything with the default options (setup() may follow).
function M.load()
  register()
end

--- The server's state for a buffer ('ready', 'lowering', 'untrusted', ...), for a status line.
---@param bufnr integer|nil
---@return string
function M.status(bufnr)
  local entry = require('torch_mlir_lens.client').for_buffer(bufnr or vim.api.nvim_get_current_buf())
  return entry and entry.status and entry.status.state or ''
end

return M
