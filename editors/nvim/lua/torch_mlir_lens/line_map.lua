-- Source ↔ IR lines of one lowering (the VS Code client's lineMap.ts, the parts a split
-- needs). Lines here are 0-based, as Neovim's API counts them; the server's 1-based `map`
-- (`IrLineMapping`: irLine → uri:line at call depth `depth`) is converted once.

local M = {}
M.__index = M

local function push_unique(list, value)
  for _, v in ipairs(list) do
    if v == value then
      return
    end
  end
  table.insert(list, value)
end

--- A map from the `map` and `frames` of a `torchMlirLens/lower` answer.
--- `ir_offset`: lines shown above the IR (failure notes).
---@param map table[]|nil
---@param ir_offset integer
---@param frames table|nil
function M.new(map, ir_offset, frames)
  local self = setmetatable({ by_source = {}, by_ir = {}, chain_by_ir = {} }, M)
  for _, m in ipairs(map or {}) do
    local ir_line = m.irLine - 1 + ir_offset
    local line = m.line - 1
    if ir_line >= 0 and line >= 0 then
      self:_link(m.uri, line, ir_line)
      local sources = self.by_ir[ir_line] or {}
      local seen = false
      for _, s in ipairs(sources) do
        seen = seen or (s.uri == m.uri and s.line == line)
      end
      if not seen then
        table.insert(sources, { uri = m.uri, line = line, depth = m.depth or 0 })
      end
      self.by_ir[ir_line] = sources
    end
  end
  if frames and frames ~= vim.NIL then
    self:_add_frames(frames, ir_offset)
  end
  for _, lines in pairs(self.by_source) do
    for _, irs in pairs(lines) do
      table.sort(irs)
    end
  end
  for _, sources in pairs(self.by_ir) do
    table.sort(sources, function(a, b)
      if a.depth ~= b.depth then
        return a.depth < b.depth
      end
      return a.line < b.line
    end)
  end
  return self
end

function M:_link(uri, line, ir_line)
  local lines = self.by_source[uri]
  if not lines then
    lines = {}
    self.by_source[uri] = lines
  end
  lines[line] = lines[line] or {}
  push_unique(lines[line], ir_line)
end

-- Ops made inside library code: their library lines link to the IR too (while the split is
-- open, the cursor in `modeling_llama.py` lights up that line's ops).
function M:_add_frames(frames, ir_offset)
  local library = {}
  for _, index in ipairs(frames.library or {}) do
    library[index] = true
  end
  local chains = {}
  for c, flat in ipairs(frames.chains or {}) do
    local chain = {}
    for i = 1, #flat - 1, 2 do
      local uri = frames.files[flat[i] + 1]
      if uri and flat[i + 1] >= 1 then
        table.insert(chain, { uri = uri, line = flat[i + 1] - 1, library = library[flat[i]] == true })
      end
    end
    chains[c - 1] = chain
  end
  for _, row in ipairs(frames.rows or {}) do
    local ir_line = row[1] - 1 + ir_offset
    local chain = chains[row[2]]
    if ir_line >= 0 and chain then
      self.chain_by_ir[ir_line] = self.chain_by_ir[ir_line] or chain
      for _, f in ipairs(chain) do
        if f.library then -- user frames come from `map`
          self:_link(f.uri, f.line, ir_line)
        end
      end
    end
  end
end

--- IR lines produced by a source line (through any frame: a `forward` line that calls a
--- submodule owns the submodule's ops too).
---@return integer[]
function M:ir_lines_for(uri, line)
  local lines = self.by_source[uri]
  return lines and lines[line] or {}
end

--- Whether any op of this map comes from `uri`.
function M:covers(uri)
  return self.by_source[uri] ~= nil
end

--- Every frame of an IR line's op, innermost first: through library code when it came from
--- there, else its user frames. Each {uri, line}.
---@return table[]
function M:chain_for(ir_line)
  local chain = self.chain_by_ir[ir_line]
  if chain then
    return chain
  end
  return self.by_ir[ir_line] or {}
end

return M
