-- The Neovim API differences this plugin meets, in one place: 0.7 (Debian 12) has
-- `vim.lsp.start_client` + `buf_attach_client`, dot-called client methods and `vim.loop`;
-- 0.8+ has `vim.lsp.start`, 0.10+ `vim.uv` and `vim.lsp.get_clients`, 0.11+ colon-called
-- client methods (the dot forms are deprecated there).

local M = {}

M.uv = vim.uv or vim.loop

--- Whether this Neovim is at least `version` ("0.11").
---@param version string
---@return boolean
function M.has(version)
  return vim.fn.has('nvim-' .. version) == 1
end

local colon_methods = M.has('0.11')

--- `client.request` / `client:request`: returns (ok, request_id).
function M.request(client, method, params, handler, bufnr)
  if colon_methods then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

--- `client.notify` / `client:notify`.
function M.notify(client, method, params)
  if colon_methods then
    return client:notify(method, params)
  end
  return client.notify(method, params)
end

--- Whether the client's process has gone (or is going).
function M.is_stopped(client)
  if client == nil then
    return true
  end
  if colon_methods then
    return client:is_stopped()
  end
  return client.is_stopped()
end

--- Starts a language client for `config` and attaches `bufnr`; returns its id or nil.
--- A new client every time: which buffers share a client (one per project root) is the
--- caller's decision, not Neovim's reuse rule.
---@param config table
---@param bufnr integer
---@return integer|nil
function M.start_client(config, bufnr)
  if vim.lsp.start then
    return vim.lsp.start(config, {
      bufnr = bufnr,
      reuse_client = function()
        return false
      end,
    })
  end
  local id = vim.lsp.start_client(config)
  if id then
    vim.lsp.buf_attach_client(bufnr, id)
  end
  return id
end

--- Encodes a Lua table as JSON.
function M.json_encode(value)
  if vim.json then
    return vim.json.encode(value)
  end
  return vim.fn.json_encode(value)
end

--- Decodes JSON; nil (and the error) when it is not JSON.
function M.json_decode(text)
  local ok, value = pcall(vim.json and vim.json.decode or vim.fn.json_decode, text)
  if ok then
    return value
  end
  return nil, value
end

return M
