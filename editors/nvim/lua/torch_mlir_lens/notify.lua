-- Messages to the user, and the guard every entry point runs under: a failure becomes one
-- clear `vim.notify` line, never a Lua stack trace in the user's face.

local M = {}

local PREFIX = 'Torch-MLIR Lens: '

local function say(message, level)
  vim.notify(PREFIX .. message, level)
end

function M.info(message)
  say(message, vim.log.levels.INFO)
end

function M.warn(message)
  say(message, vim.log.levels.WARN)
end

function M.error(message)
  say(message, vim.log.levels.ERROR)
end

--- The first line of an error value, without Lua's "file:line:" position prefix.
---@param err any
---@return string
function M.describe(err)
  local text = type(err) == 'table' and (err.message or vim.inspect(err)) or tostring(err)
  text = text:gsub('^[^\n]-%.lua:%d+: ', '')
  return (text:match('^[^\n]*') or text)
end

--- Runs `fn(...)`; an error is reported (`what` failed: reason) instead of raised.
---@param what string
---@param fn function
function M.guard(what, fn, ...)
  local ok, err = pcall(fn, ...)
  if not ok then
    M.error(what .. ' failed: ' .. M.describe(err))
  end
end

--- `fn` wrapped in `guard`, for callbacks and autocmds.
---@param what string
---@param fn function
---@return function
function M.guarded(what, fn)
  return function(...)
    M.guard(what, fn, ...)
  end
end

return M
