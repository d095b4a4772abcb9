-- Code lenses, refreshed safely on every Neovim.
--
-- Neovim up to 0.11 cannot receive `workspace/codeLens/refresh` (0.7 does not announce it,
-- 0.11 neither), so the verdict lens would show only when lenses happen to be asked again:
-- this module asks on the server's `torchMlirLens/status`, after diagnostics, and on
-- BufEnter / InsertLeave / BufWritePost.
--
-- It never calls `vim.lsp.codelens.refresh()` on 0.7: that function marks the buffer as
-- "refreshing" and only its response handler clears the mark, but `vim.lsp.buf_request`
-- sends nothing for a client that is attached yet not initialized (0.7 keeps it out of
-- `active_clients` until `initialize` answers), so a refresh before the server is ready
-- leaves the mark set and every later refresh of that buffer returns early: its lenses are
-- gone for good. Here the request goes to our own client only once it is initialized, and its
-- answer is handed to `vim.lsp.codelens.on_codelens`, which draws the lenses (and clears that
-- mark, mending a buffer a user's own autocmd had stuck).
--
-- Neovim's development version (0.12) replaces this with `vim.lsp.codelens.enable()`, which
-- keeps a buffer's lenses itself: there lenses are enabled per buffer and refreshed through
-- Neovim's own refresh handler (not tested: no released Neovim has it yet).

local compat = require('torch_mlir_lens.compat')

local M = {}

local inflight = {} -- bufnr → true while a codeLens request of ours is out
local again = {} -- bufnr → true: asked again while in flight

local codelens = vim.lsp.codelens
-- 0.12+: `enable` exists and `on_codelens` is a deprecated stub.
local managed_by_neovim = codelens.enable ~= nil

local function draw(err, result, ctx, handler_config)
  if err then
    return
  end
  local ns = codelens.__namespaces and codelens.__namespaces[ctx.client_id]
  if ns and (result == nil or #result == 0) then
    -- on_codelens draws nothing for an empty list, so lenses that went away would linger.
    vim.api.nvim_buf_clear_namespace(ctx.bufnr, ns, 0, -1)
  end
  codelens.on_codelens(err, result, ctx, handler_config)
end

--- Asks `client` for the lenses of `bufnr` (when it is ready; otherwise it asks once ready).
---@param client table
---@param bufnr integer
function M.refresh(client, bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) or compat.is_stopped(client) or not client.initialized then
    return -- the client's on_init refreshes every buffer attached by then
  end
  if managed_by_neovim then
    codelens.enable(true, { bufnr = bufnr, client_id = client.id })
    if codelens.on_refresh then
      codelens.on_refresh(nil, nil, { client_id = client.id })
    end
    return
  end
  if inflight[bufnr] then
    again[bufnr] = true
    return
  end
  inflight[bufnr] = true
  local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) } }
  local ok = compat.request(client, 'textDocument/codeLens', params, function(err, result, ctx, handler_config)
    inflight[bufnr] = nil
    if vim.api.nvim_buf_is_valid(bufnr) then
      draw(err, result, ctx, handler_config)
    end
    if again[bufnr] then
      again[bufnr] = nil
      M.refresh(client, bufnr)
    end
  end, bufnr)
  if not ok then
    inflight[bufnr] = nil
  end
end

local pending = {} -- bufnr → true: a refresh is scheduled

--- `refresh`, coalesced: a burst of reasons (status, diagnostics, autocmds) asks once.
---@param client table
---@param bufnr integer
function M.refresh_soon(client, bufnr)
  if pending[bufnr] then
    return
  end
  pending[bufnr] = true
  vim.defer_fn(function()
    pending[bufnr] = nil
    M.refresh(client, bufnr)
  end, 100)
end

--- The lens titles of a buffer, as Neovim holds them (any Neovim version).
---@param bufnr integer
---@return string[]
function M.titles(bufnr)
  local titles = {}
  local ok, lenses = pcall(codelens.get, managed_by_neovim and { bufnr = bufnr } or bufnr)
  if not ok then
    return titles
  end
  for _, item in ipairs(lenses or {}) do
    local lens = item.lens or item
    if lens.command then
      table.insert(titles, lens.command.title)
    end
  end
  return titles
end

return M
