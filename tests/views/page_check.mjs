// Loads a self-contained page in headless Chromium (playwright-core from the e2e set-up) and
// prints what a person would meet: script errors, requests beyond the file, what is drawn and,
// for a graph, the details a click on a node shows.
//   node tests/views/page_check.mjs PAGE.html [NODE_ID] > result.json
import { createRequire } from 'node:module';
import { CACHE, CHROMIUM } from '../e2e/workbench.mjs';

const require = createRequire(`${CACHE}/pw/node_modules/x.js`);
const { chromium } = require('playwright-core');
const [file, click] = process.argv.slice(2);
const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
const out = { errors: [], requests: [] };
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 850 } });
  page.on('pageerror', (e) => out.errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && out.errors.push(m.text()));
  page.on('request', (r) => !r.url().startsWith('file:') && out.requests.push(r.url()));
  await page.goto(`file://${file}`);
  await page.waitForLoadState('load');
  out.charts = await page.locator('svg.chart').count();
  if (click !== undefined) {
    await page.waitForSelector('body[data-ready="1"]', { timeout: 15_000 });
    out.boxes = await page.locator('svg .item').count();
    out.statuses = await page.locator('svg .item').evaluateAll((els) => els.map((e) => e.dataset.status));
    await page.locator(`svg .item[data-id="${click}"]`).click();
    await page.waitForSelector(`body[data-selected="${click}"]`, { timeout: 5_000 });
    out.details = await page.locator('aside').innerText();
  }
} catch (e) {
  out.errors.push(String(e).split('\n')[0]);
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
