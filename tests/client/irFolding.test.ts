// Which lines of an IR pane fold: runs of weight constants, long enough to be worth it.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MIN_RUN, constantRuns } from '../../client/src/irFolding';

const weight = (n: number) => `    %cst_${n} = torch.vtensor.literal(dense_resource<__elided__> : tensor<8x8xf32>) : !torch.vtensor<[8,8],f32>`;

describe('constantRuns', () => {
  it('folds each run of weight constants, not the code between them', () => {
    const lines = [
      'func.func @main(%arg0: !torch.vtensor<[2,8],f32>) -> !torch.vtensor<[2,8],f32> {',
      ...Array.from({ length: 9 }, (_, i) => weight(i)),
      '    %0 = call @Block(%arg0, %cst_0, %cst_1) : (...) -> ...',
      ...Array.from({ length: 5 }, (_, i) => weight(10 + i)),
      '    %1 = call @Block(%0, %cst_10) : (...) -> ...',
      '    %cst_20 = arith.constant dense_resource<__elided__> : tensor<8xf32>',
      '    return %1',
    ];
    assert.deepEqual(constantRuns(lines), [[1, 9], [11, 15]]);
  });

  it('leaves short runs and scalar constants alone', () => {
    const short = Array.from({ length: MIN_RUN - 1 }, (_, i) => weight(i));
    const scalars = Array.from({ length: 8 }, (_, i) => `    %c${i} = arith.constant ${i} : index`);
    assert.deepEqual(constantRuns([...short, 'x', ...scalars]), []);
  });

  it('a run that ends the text folds too', () => {
    assert.deepEqual(constantRuns(['a', ...Array.from({ length: MIN_RUN }, (_, i) => weight(i))]), [[1, MIN_RUN]]);
  });
});
