-- Torch-MLIR Lens: loads with the default options; `require('torch_mlir_lens').setup({...})`
-- sets others (docs/editors.md).
if vim.g.loaded_torch_mlir_lens then
  return
end
vim.g.loaded_torch_mlir_lens = true

if vim.fn.has('nvim-0.7') ~= 1 then
  vim.notify('Torch-MLIR Lens needs Neovim 0.7 or later.', vim.log.levels.ERROR)
  return
end

require('torch_mlir_lens').load()
