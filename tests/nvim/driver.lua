-- Drives the Neovim plugin (editors/nvim) headless against the real language server and
-- writes what Neovim's own state shows to a JSON file that tests/nvim/test_neovim.py checks:
-- lens titles (`vim.lsp.codelens.get`), a hover (`textDocument/hover`), diagnostics
-- (`vim.diagnostic.get`), the IR split's lines and the highlighted lines (extmarks), the
-- trust prompt and the server's own `torchMlirLens/serverInfo`.
--
-- The trust prompt is answered here by replacing `vim.ui.select`; every wait is a condition
-- with a time-out (`wait_for`), never a sleep. Environment:
--   TML_NVIM_SCENARIO  full | remembered | no_server
--   TML_NVIM_WORKSPACE the folder of the copied example files
--   TML_NVIM_RESULT    where to write the JSON
--   TML_NVIM_PYTHON    the interpreter option (unset: the plugin's own choice, $VIRTUAL_ENV)

local uv = vim.uv or vim.loop
local json = vim.json

local scenario = os.getenv('TML_NVIM_SCENARIO') or 'full'
local workspace = assert(os.getenv('TML_NVIM_WORKSPACE'), 'TML_NVIM_WORKSPACE unset')
local result_path = assert(os.getenv('TML_NVIM_RESULT'), 'TML_NVIM_RESULT unset')
local started = uv.hrtime()

local result = { scenario = scenario, steps = {}, notifications = {}, prompts = {} }
local version = vim.version()
result.nvim = string.format('%d.%d.%d', version.major, version.minor, version.patch)

local function elapsed()
  return (uv.hrtime() - started) / 1e9
end

-- What the plugin says to the user, kept (and not shown: there is no screen).
vim.notify = function(message, level)
  table.insert(result.notifications, { message = message, level = level or vim.log.levels.INFO })
end

-- The trust prompt: recorded, answered later by the scenario.
local pending_choice = nil
vim.ui.select = function(items, opts, on_choice)
  table.insert(result.prompts, { items = items, prompt = opts and opts.prompt, at = elapsed() })
  pending_choice = { items = items, on_choice = on_choice }
end

local function write_result()
  result.seconds = elapsed()
  local file = assert(io.open(result_path, 'w'))
  file:write(json.encode(result))
  file:close()
end

-- The scenario runs in a coroutine that yields to Neovim's main loop while it waits, so the
-- loop goes on as with a user: typed keys are handled and CursorMoved fires.
local scenario_thread
local current_step
local resume -- defined below: continues the scenario, finishing it on an error

local function wait_for(what, timeout_s, condition)
  local deadline = uv.now() + timeout_s * 1000
  while true do
    local value = condition()
    if value ~= nil and value ~= false then
      return value
    end
    if uv.now() > deadline then
      error('timed out after ' .. timeout_s .. ' s waiting for ' .. what, 0)
    end
    vim.defer_fn(resume, 50)
    coroutine.yield()
  end
end

-- No pcall around a step: the wait inside yields, and a yield may not cross a pcall on every
-- Lua Neovim is built with. An error ends the coroutine; `resume` records it on this step.
local function step(name, fn)
  current_step = { ok = false, started = elapsed() }
  result.steps[name] = current_step
  fn()
  current_step.ok = true
  current_step.seconds = elapsed() - current_step.started
end

local function our_clients()
  local all = vim.lsp.get_clients and vim.lsp.get_clients() or vim.lsp.get_active_clients()
  local out = {}
  for _, client in ipairs(all) do
    if client.name == 'torch-mlir-lens' then
      table.insert(out, client)
    end
  end
  return out
end

local function request(client, method, params, bufnr, timeout_s)
  local answer
  local send = vim.fn.has('nvim-0.11') == 1 and function(...) return client:request(...) end or client.request
  local ok = send(method, params, function(err, res)
    answer = { err = err, result = res }
  end, bufnr)
  assert(ok, 'the client did not send ' .. method)
  wait_for(method .. ' to be answered', timeout_s, function()
    return answer
  end)
  if answer.err then
    error(method .. ' failed: ' .. tostring(answer.err.message), 0)
  end
  return answer.result
end

local function server_info(client)
  return request(client, 'torchMlirLens/serverInfo', { waitForWorker = false }, 0, 30)
end

local function line_of(bufnr, needle)
  for i, text in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
    if text:find(needle, 1, true) then
      return i - 1
    end
  end
  error(needle .. ' not found', 0)
end

local function lens_titles(bufnr)
  return require('torch_mlir_lens.lenses').titles(bufnr)
end

local function has_title(titles, prefix)
  for _, t in ipairs(titles) do
    if t:sub(1, #prefix) == prefix then
      return true
    end
  end
  return false
end

local function hover_text(client, bufnr, line)
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    position = { line = line, character = 8 },
  }
  local answer = request(client, 'textDocument/hover', params, bufnr, 120)
  if answer == nil or answer == vim.NIL then
    return vim.NIL
  end
  local contents = answer.contents
  return type(contents) == 'table' and (contents.value or json.encode(contents)) or tostring(contents)
end

-- The cursor moves as the user's keys move it: CursorMoved fires from the typed keys.
local function move_cursor(win, line)
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_feedkeys(tostring(line + 1) .. 'G', 'n', false)
  wait_for('the cursor to move', 5, function()
    return vim.api.nvim_win_get_cursor(win)[1] == line + 1
  end)
end

local function extmark_lines(bufnr)
  local ns = vim.api.nvim_get_namespaces()['torch_mlir_lens_linked']
  local lines = {}
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(bufnr, ns, 0, -1, { details = true })) do
    table.insert(lines, { line = mark[2], group = mark[4].line_hl_group })
  end
  return lines
end

local sentinel_path = workspace .. '/sentinel-ran.txt'
local function sentinel_ran()
  return uv.fs_stat(sentinel_path) ~= nil
end

local function setup()
  local python = os.getenv('TML_NVIM_PYTHON')
  require('torch_mlir_lens').setup({
    python = (python and python ~= '') and python or nil,
    -- Lens targets other than the defaults (linalg, tosa): proof that settings arrive.
    settings = { lensTargets = { 'linalg', 'stablehlo' }, diagnosticTargets = { 'linalg' } },
  })
end

local function open(name)
  vim.cmd('edit ' .. vim.fn.fnameescape(workspace .. '/' .. name))
  return vim.api.nvim_get_current_buf()
end

local function wait_client()
  return wait_for('the server to initialize', 60, function()
    local c = our_clients()[1]
    return c and c.initialized and c
  end)
end

local scenarios = {}

function scenarios.full()
  local sentinel_buf, client
  step('untrusted', function()
    -- A user's own lens autocmd, as Neovim's help suggests: on 0.7 its refresh before the
    -- server is ready would leave the buffer without lenses for good, were the plugin to
    -- rely on vim.lsp.codelens.refresh() itself.
    if vim.fn.has('nvim-0.12') == 0 then
      vim.api.nvim_create_autocmd('BufEnter', {
        pattern = '*.py',
        callback = function()
          vim.lsp.codelens.refresh()
        end,
      })
    end
    setup()
    sentinel_buf = open('sentinel.py')
    client = wait_client()
    result.untrusted = {}
    result.untrusted.lenses = wait_for('lenses of sentinel.py', 30, function()
      local titles = lens_titles(sentinel_buf)
      return #titles > 0 and titles
    end)
    wait_for('the trust prompt', 30, function()
      return pending_choice
    end)
    result.untrusted.hover = hover_text(client, sentinel_buf, line_of(sentinel_buf, 'return x * 2'))
    result.untrusted.info = server_info(client)
    result.untrusted.sentinel_ran = sentinel_ran()
  end)

  step('trust', function()
    local choice = pending_choice
    pending_choice = nil
    choice.on_choice(choice.items[1], 1)
    result.trust = {}
    result.trust.info = wait_for('the server to be trusted', 30, function()
      local info = server_info(client)
      return info.trusted and info
    end)
    -- The server checks the open file now: the file's module-level code runs.
    result.trust.sentinel_ran = wait_for('sentinel.py to run', 120, sentinel_ran)
    local file = io.open(require('torch_mlir_lens.trust').store_path())
    result.trust.store = file and json.decode(file:read('*a'))
    if file then
      file:close()
    end
  end)

  local model_buf
  step('model', function()
    model_buf = open('partial_lowering.py')
    result.model = {}
    result.model.diagnostics = wait_for('diagnostics of partial_lowering.py', 120, function()
      local found = {}
      for _, d in ipairs(vim.diagnostic.get(model_buf)) do
        table.insert(found, { lnum = d.lnum, message = d.message, severity = d.severity })
      end
      return #found > 0 and found
    end)
    -- The verdict lens comes with the check: 0.7 is never told to refresh, the plugin asks.
    result.model.lenses = wait_for('the verdict lens', 60, function()
      local titles = lens_titles(model_buf)
      return has_title(titles, 'Linalg ') and titles
    end)
    result.model.lin_line = line_of(model_buf, 'y = self.lin(x)')
    result.model.hover = hover_text(client, model_buf, result.model.lin_line)
  end)

  step('ir', function()
    local source_win = vim.api.nvim_get_current_win()
    move_cursor(source_win, result.model.lin_line)
    vim.cmd('TorchMlirShow linalg')
    local views = require('torch_mlir_lens.ir_view').views
    local ir_buf = wait_for('the IR split', 120, function()
      for buf, view in pairs(views) do
        if view.map and vim.api.nvim_buf_line_count(buf) > 3 then
          return buf
        end
      end
    end)
    local ir_win
    for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
      if vim.api.nvim_win_get_buf(win) == ir_buf then
        ir_win = win
      end
    end
    result.ir = {
      windows = #vim.api.nvim_tabpage_list_wins(0),
      shown = ir_win ~= nil,
      filetype = vim.bo[ir_buf].filetype,
      syntax = vim.b[ir_buf].current_syntax,
      name = vim.api.nvim_buf_get_name(ir_buf),
      lines = vim.api.nvim_buf_get_lines(ir_buf, 0, -1, false),
      focus_stayed = vim.api.nvim_get_current_win() == source_win,
    }
    -- Source → IR: each line lights up its own ops (waiting for the highlight to change).
    local function ir_marks_once(pred)
      return function()
        local marks = extmark_lines(ir_buf)
        for _, mark in ipairs(marks) do
          mark.text = vim.api.nvim_buf_get_lines(ir_buf, mark.line, mark.line + 1, false)[1]
        end
        return pred(marks) and marks
      end
    end
    local function any_text(marks, needle)
      for _, mark in ipairs(marks) do
        if mark.text:find(needle, 1, true) then
          return true
        end
      end
      return false
    end
    result.ir.erfinv_line = line_of(model_buf, 'torch.erfinv(y)')
    move_cursor(source_win, result.ir.erfinv_line)
    result.ir.from_erfinv = wait_for('the erfinv line lit up in the IR', 10, ir_marks_once(function(marks)
      return any_text(marks, '@torch.aten.erfinv(')
    end))
    move_cursor(source_win, result.model.lin_line)
    result.ir.from_lin = wait_for('the Linear line lit up in the IR', 10, ir_marks_once(function(marks)
      return any_text(marks, 'linalg.matmul')
    end))
    -- IR → source: the cursor on an op lights up the line that made it.
    local function source_marks_at(line)
      return function()
        local marks = extmark_lines(model_buf)
        return #marks == 1 and marks[1].line == line and marks
      end
    end
    result.ir.matmul_line = line_of(ir_buf, 'linalg.matmul')
    move_cursor(ir_win, result.ir.matmul_line)
    result.ir.from_matmul = wait_for('the Linear line lit up in the source', 10, source_marks_at(result.model.lin_line))
    result.ir.erfinv_call_line = line_of(ir_buf, 'call @torch.aten.erfinv(')
    move_cursor(ir_win, result.ir.erfinv_call_line)
    result.ir.from_erfinv_call = wait_for('the erfinv line lit up in the source', 10, source_marks_at(result.ir.erfinv_line))
    vim.api.nvim_set_current_win(source_win)
  end)

  result.clients = #our_clients()
end

-- A second session on the same project: the answer is remembered (no prompt, trusted from
-- `initializationOptions`), and `:TorchMlirUntrust` withdraws it.
function scenarios.remembered()
  step('remembered', function()
    setup()
    local buf = open('sentinel.py')
    local client = wait_client()
    result.remembered = { info = server_info(client) }
    result.remembered.lenses = wait_for('lenses of sentinel.py', 30, function()
      local titles = lens_titles(buf)
      return #titles > 0 and titles
    end)
    vim.cmd('TorchMlirUntrust')
    result.remembered.after_untrust = wait_for('the server to be untrusted', 30, function()
      local info = server_info(client)
      return (not info.trusted) and info
    end)
    result.remembered.answer = require('torch_mlir_lens.trust').get(workspace)
    -- Asking for the IR now is refused by the server; the plugin says how to trust.
    vim.api.nvim_win_set_cursor(0, { line_of(buf, 'return x * 2') + 1, 8 })
    vim.cmd('TorchMlirShow')
    result.remembered.refusal = wait_for('the refusal to be explained', 30, function()
      for _, n in ipairs(result.notifications) do
        if n.message:find('TorchMlirTrust', 1, true) and n.message:find('not trusted', 1, true) then
          return n.message
        end
      end
    end)
    -- A restarted server starts from the remembered answer, now "no".
    vim.cmd('TorchMlirRestart')
    local restarted = wait_for('a new server', 60, function()
      local c = our_clients()[1]
      return #our_clients() == 1 and c.id ~= client.id and c.initialized and c
    end)
    result.remembered.after_restart = server_info(restarted)
  end)
end

-- An interpreter without the server: said once, plainly; no client, no Lua error.
function scenarios.no_server()
  step('no_server', function()
    setup()
    open('sentinel.py')
    wait_for('the message about the interpreter', 10, function()
      return #result.notifications > 0
    end)
    open('partial_lowering.py') -- a second file of the project: not said again
    result.no_server = { clients = #our_clients(), messages = vim.v.errmsg }
  end)
end

local function finish(ok, err)
  if not ok then
    result.error = tostring(err)
    if current_step and not current_step.ok then
      current_step.error = tostring(err)
    end
  end
  write_result()
  vim.cmd(ok and 'qall!' or 'cquit! 1')
end

scenario_thread = coroutine.create(function()
  scenarios[scenario]()
  return true
end)

resume = function()
  local ok, value = coroutine.resume(scenario_thread)
  if not ok then
    finish(false, debug.traceback(scenario_thread, value))
  elseif coroutine.status(scenario_thread) == 'dead' then
    finish(true)
  end
end

vim.schedule(resume)
