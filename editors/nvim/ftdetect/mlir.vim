" MLIR files (Neovim 0.10 and later know them already).
autocmd BufNewFile,BufRead *.mlir setfiletype mlir
