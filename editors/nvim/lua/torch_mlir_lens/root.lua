-- Which project a file belongs to: the nearest folder above it holding one of the root
-- markers (pyproject.toml, .git, ...), else the file's own folder. One server per root.

local compat = require('torch_mlir_lens.compat')
local config = require('torch_mlir_lens.config')

local M = {}

local function exists(path)
  return compat.uv.fs_stat(path) ~= nil
end

--- The project root of `path` (an absolute file path), without a trailing slash.
---@param path string
---@return string
function M.of_path(path)
  local dir = vim.fn.fnamemodify(path, ':p:h')
  local start = dir
  while true do
    for _, marker in ipairs(config.options.root_markers) do
      if exists(dir .. '/' .. marker) then
        return dir
      end
    end
    local parent = vim.fn.fnamemodify(dir, ':h')
    if parent == dir then
      return start
    end
    dir = parent
  end
end

--- The project root of a buffer's file, or nil for a buffer without a file on disk.
---@param bufnr integer
---@return string|nil
function M.of_buffer(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == '' or name:match('^%a[%w+.-]*://') then
    return nil
  end
  return M.of_path(vim.fn.fnamemodify(name, ':p'))
end

return M
