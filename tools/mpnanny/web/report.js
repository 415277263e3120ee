// mpnanny report page. Reads the JSON the CLI embedded and draws it with uPlot. Every string
// from the database reaches the page through textContent, never as HTML. When done it writes
// data-* attributes on <body> (and on every chart) so a headless browser can check the page.
(function () {
  'use strict';
  var errors = window.__mpnannyErrors || [];
  var charts = 0;
  var data = JSON.parse(document.getElementById('mpnanny-data').textContent);
  var main = document.getElementById('main');
  var SEVERITY_COLOUR = { ERROR: '#d62728', WARNING: '#ff9f1a', INFO: '#999999' };
  var PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#17becf', '#8c564b', '#e377c2',
                 '#7f7f7f', '#bcbd22', '#393b79', '#637939', '#8c6d31', '#843c39', '#7b4173', '#3182bd'];
  // Steps are integers: no 2.5 on the step axis.
  var STEP_INCREMENTS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 1e5, 2e5, 5e5, 1e6, 1e7];
  var FP16 = { max: 65504, minNormal: Math.pow(2, -14), minSubnormal: Math.pow(2, -24) };

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function add(parent, child) { parent.appendChild(child); return child; }
  function fmt(v) {
    if (v === null || v === undefined) return '';
    if (typeof v === 'number') {
      if (v === 0) return '0';
      var a = Math.abs(v);
      if (a >= 1e5 || a < 1e-3) return v.toExponential(2);
      return String(+v.toPrecision(4));
    }
    return String(v);
  }
  function chartWidth() {
    var w = main.clientWidth || 1100;
    return Math.max(320, Math.min(1120, w - 60));
  }
  function table(parent, columns, rows, rowClass) {
    var t = add(parent, el('table'));
    var head = add(add(t, el('thead')), el('tr'));
    columns.forEach(function (c) { add(head, el('th', c.num ? 'num' : '', c.title)); });
    var body = add(t, el('tbody'));
    rows.forEach(function (r) {
      var tr = add(body, el('tr', rowClass ? rowClass(r) : ''));
      columns.forEach(function (c) {
        var v = c.value ? c.value(r) : r[c.key];
        var td = add(tr, el('td', (c.num ? 'num ' : '') + (c.cls ? c.cls(r) : ''), c.num ? fmt(v) : (v === null || v === undefined ? '' : v)));
        if (c.mono) td.classList.add('mono');
      });
    });
    return t;
  }

  // Vertical lines at alert steps, coloured by the worst severity at that step.
  function alertMarkers(alerts) {
    var worst = {};
    (alerts || []).forEach(function (a) {
      var s = a.step;
      if (worst[s] !== 'ERROR') worst[s] = a.severity;
    });
    return function (u) {
      var ctx = u.ctx, b = u.bbox, min = u.scales.x.min, max = u.scales.x.max;
      ctx.save();
      Object.keys(worst).forEach(function (key) {
        var step = +key;
        if (step < min || step > max) return;
        var x = Math.round(u.valToPos(step, 'x', true));
        ctx.strokeStyle = SEVERITY_COLOUR[worst[key]] || '#999';
        ctx.globalAlpha = 0.55;
        ctx.lineWidth = 1.5 * devicePixelRatio;
        ctx.beginPath(); ctx.moveTo(x, b.top); ctx.lineTo(x, b.top + b.height); ctx.stroke();
        ctx.globalAlpha = 1;
        ctx.fillStyle = SEVERITY_COLOUR[worst[key]] || '#999';
        ctx.beginPath(); ctx.moveTo(x - 5, b.top); ctx.lineTo(x + 5, b.top); ctx.lineTo(x, b.top + 8); ctx.fill();
      });
      ctx.restore();
    };
  }
  function horizontalLine(value, colour, label) {
    return function (u) {
      var b = u.bbox;
      if (value < u.scales.y.min || value > u.scales.y.max) return;
      var y = Math.round(u.valToPos(value, 'y', true));
      var ctx = u.ctx;
      ctx.save();
      ctx.strokeStyle = colour; ctx.setLineDash([6, 4]); ctx.lineWidth = 1.5 * devicePixelRatio;
      ctx.beginPath(); ctx.moveTo(b.left, y); ctx.lineTo(b.left + b.width, y); ctx.stroke();
      ctx.setLineDash([]);
      // uPlot leaves the context right-aligned after its axis labels.
      ctx.textAlign = 'left'; ctx.textBaseline = 'bottom';
      ctx.fillStyle = colour; ctx.font = (11 * devicePixelRatio) + 'px sans-serif';
      ctx.fillText(label, b.left + 4 * devicePixelRatio, y - 3 * devicePixelRatio);
      ctx.restore();
    };
  }

  function chartBox(parent, id, kind, caption) {
    var box = add(parent, el('div', 'chart'));
    box.setAttribute('data-chart', id);
    box.setAttribute('data-kind', kind);
    if (caption) add(box, el('div', 'caption', caption));
    return box;
  }

  // series: [{label, steps, values}]; options: {log, alerts, lines: [hook...], width, height, points}
  function lineChart(parent, id, title, series, options) {
    options = options || {};
    var xs = {};
    series.forEach(function (s) { s.steps.forEach(function (x) { xs[x] = true; }); });
    var x = Object.keys(xs).map(Number).sort(function (a, b) { return a - b; });
    var index = {};
    x.forEach(function (v, i) { index[v] = i; });
    var columns = [x];
    series.forEach(function (s) {
      var column = x.map(function () { return null; });
      s.steps.forEach(function (step, i) {
        var v = s.values[i];
        if (options.log && !(v > 0)) v = null;
        column[index[step]] = v;
      });
      columns.push(column);
    });
    var box = chartBox(parent, id, 'line', title);
    box.setAttribute('data-points', String(x.length));
    box.setAttribute('data-series', String(series.length));
    var hooks = [];
    if (options.alerts) hooks.push(alertMarkers(options.alerts));
    (options.lines || []).forEach(function (h) { hooks.push(h); });
    var opts = {
      width: options.width || chartWidth(),
      height: options.height || 220,
      scales: { x: { time: false }, y: options.log ? { distr: 3 } : {} },
      axes: [{ label: options.xLabel || 'step', incrs: STEP_INCREMENTS },
             { label: options.yLabel || '', size: 70, values: function (u, vals) { return vals.map(function (v) { return v === null ? '' : fmt(v); }); } }],
      series: [{ label: options.xLabel || 'step' }].concat(series.map(function (s, i) {
        var line = { label: s.label, stroke: s.colour || PALETTE[i % PALETTE.length], width: 1.6, spanGaps: true,
                     value: function (u, v) { return v === null ? '-' : fmt(v); } };
        if (options.points) { line.paths = function () { return null; }; line.points = { show: true, size: 7, fill: line.stroke }; }
        return line;
      })),
      legend: { show: series.length <= 12 },
      hooks: { draw: hooks }
    };
    if (x.length === 0) {
      add(box, el('p', 'note', 'no data'));
      return box;
    }
    new uPlot(opts, columns, box);
    charts++;
    return box;
  }

  // A log2|x| histogram per step: rows are binades, columns steps, shade is the share of the
  // tensor's values in that binade. fp16's limits are drawn as lines.
  function heatmap(parent, id, map, precision) {
    var caption = map.what + ' at ' + map.site + (map.function ? ' in ' + map.function : '') +
      (map.headroom !== null && map.headroom !== undefined ? ' (headroom ' + fmt(map.headroom) + 'x)' : '');
    var box = chartBox(parent, id, 'heatmap', caption);
    box.setAttribute('data-points', String(map.steps.length));
    var readout = add(box, el('div', 'readout', ''));
    var buckets = 0;
    map.counts.forEach(function (c) { buckets = Math.max(buckets, c.length); });
    var lo = map.min_exponent - 1, hi = map.min_exponent + buckets - 1;
    var maxLog = map.max_abs.map(function (v) { return v > 0 ? Math.log2(v) : null; });
    function cells(u) {
      var ctx = u.ctx, b = u.bbox, xs = map.steps, n = xs.length;
      ctx.save();
      ctx.beginPath(); ctx.rect(b.left, b.top, b.width, b.height); ctx.clip();
      var pos = xs.map(function (s) { return u.valToPos(s, 'x', true); });
      for (var i = 0; i < n; i++) {
        var half = n > 1 ? Math.abs((i + 1 < n ? pos[i + 1] : pos[i]) - (i > 0 ? pos[i - 1] : pos[i])) / (i > 0 && i + 1 < n ? 4 : 2) : b.width / 2;
        var left = pos[i] - half, right = pos[i] + half;
        var column = map.counts[i], total = 0;
        column.forEach(function (c) { total += c; });
        if (!total) continue;
        for (var k = 0; k < column.length; k++) {
          if (!column[k]) continue;
          var e = map.min_exponent + k - 1;
          var y0 = u.valToPos(e, 'y', true), y1 = u.valToPos(e + 1, 'y', true);
          var share = column[k] / total;
          var alpha = 0.12 + 0.88 * Math.log(1 + 1000 * share) / Math.log(1001);
          ctx.fillStyle = 'rgba(31,119,180,' + alpha.toFixed(3) + ')';
          ctx.fillRect(Math.floor(left), Math.min(y0, y1), Math.max(1, Math.ceil(right - left)), Math.abs(y1 - y0));
        }
      }
      ctx.restore();
    }
    var limits = [
      horizontalLine(Math.log2(FP16.max), '#d62728', 'fp16 overflow (65504)'),
      horizontalLine(Math.log2(FP16.minNormal), '#ff7f0e', 'fp16 subnormal below 2^-14'),
      horizontalLine(Math.log2(FP16.minSubnormal), '#9467bd', 'fp16 flushes to 0 below 2^-24')
    ];
    var opts = {
      width: Math.min(chartWidth(), 540), height: 230,
      scales: { x: { time: false }, y: { auto: false, range: [lo, hi] } },
      axes: [{ label: 'step', incrs: STEP_INCREMENTS }, { label: 'log2 |x|', size: 56, values: function (u, vals) { return vals.map(function (v) { return '2^' + v; }); } }],
      series: [{ label: 'step' }, { label: 'max |x| (log2)', stroke: '#1d2330', width: 1.2, spanGaps: true,
                value: function (u, v) { return v === null ? '-' : fmt(Math.pow(2, v)); } }],
      legend: { show: false },
      hooks: {
        drawClear: [cells],
        draw: limits,
        setCursor: [function (u) {
          var i = u.cursor.idx;
          if (i === null || i === undefined || u.cursor.top === null || u.cursor.top < 0) { readout.textContent = ''; return; }
          var e = Math.floor(u.posToVal(u.cursor.top, 'y'));
          var k = e - map.min_exponent + 1;
          var column = map.counts[i] || [], total = 0;
          column.forEach(function (c) { total += c; });
          var count = k >= 0 && k < column.length ? column[k] : 0;
          readout.textContent = 'step ' + map.steps[i] + ': ' + count + ' of ' + total + ' values in [2^' + e + ', 2^' + (e + 1) + '); max |x| ' + fmt(map.max_abs[i]);
        }]
      }
    };
    // A long caption (C++ signatures) must wrap, not widen the box past two per row.
    box.style.width = opts.width + 'px';
    new uPlot(opts, [map.steps, maxLog], box);
    if (precision === 'BF16') add(box, el('div', 'caption', 'bf16 limits (2^-126 .. 2^128) lie beyond this range; fp16 lines shown for reference.'));
    charts++;
    return box;
  }

  function renderRun(run, multi) {
    var section = add(main, el('section', 'run'));
    section.setAttribute('data-rank', String(run.rank));
    add(section, el('h2', '', (multi ? 'Rank ' + run.rank + ': ' : 'Run: ') + run.file));
    add(section, el('p', 'meta', 'run ' + run.run_id + ' · judged against ' + run.precision + ' · torch ' +
      fmt(run.torch_version) + ' · ' + run.steps.seen + ' steps seen, ' + run.steps.traced + ' traced · ' +
      run.alerts_total + ' alerts · started ' + fmt(run.started_at) + (run.ended_at ? ', ended ' + run.ended_at : ', not closed')));

    var counts = {};
    run.alerts.forEach(function (a) { var k = a.severity + ' ' + a.type; counts[k] = (counts[k] || 0) + 1; });
    var pills = add(section, el('p'));
    Object.keys(counts).sort().forEach(function (k) { add(pills, el('span', 'pill ' + k.split(' ')[0], k + ' × ' + counts[k])); });

    var id = 'r' + run.rank + '-';
    renderCurves(section, run, id);
    renderHeatmaps(section, run, id);
    renderLocalization(section, run);
    renderVerdicts(section, run);
    renderAlerts(section, run);
  }

  function renderCurves(section, run, id) {
    add(section, el('h3', '', 'Training curves'));
    var grid = add(section, el('div', 'grid'));
    var c = run.curves;
    var names = Object.keys(c.scalars).sort(function (a, b) { return (a === 'loss' ? -1 : 0) - (b === 'loss' ? -1 : 0) || (a < b ? -1 : 1); });
    names.forEach(function (name) {
      lineChart(grid, id + 'scalar-' + name, name, [{ label: name, steps: c.scalars[name].steps, values: c.scalars[name].values }],
        { alerts: run.alerts, yLabel: name });
    });
    if (c.grad_norm.steps.length) {
      lineChart(grid, id + 'grad-norm', 'global gradient norm (log scale; lines: alerts)',
        [{ label: 'gradient norm', steps: c.grad_norm.steps, values: c.grad_norm.values }],
        { alerts: run.alerts, log: true, yLabel: '||g||' });
    }
    if (c.loss_scale) {
      lineChart(grid, id + 'loss-scale', 'loss scale (log scale)' + (c.loss_scale.skipped.length ? '; ' + c.loss_scale.skipped.length + ' skipped steps' : ''),
        [{ label: 'loss scale', steps: c.loss_scale.steps, values: c.loss_scale.values }],
        { alerts: run.alerts, log: true, yLabel: 'scale' });
    }
    if (!names.length && !c.grad_norm.steps.length && !c.loss_scale) add(grid, el('p', 'note', 'no scalars, gradients or loss scale recorded'));
    var layers = Object.keys(c.layer_grad_norms);
    if (layers.length) {
      var details = add(section, el('details'));
      add(details, el('summary', '', 'Per-parameter gradient norms (' + layers.length + ' parameters)'));
      var drawn = false;
      details.addEventListener('toggle', function () {
        if (!details.open || drawn) return;
        drawn = true;
        var peak = function (name) { return Math.max.apply(null, c.layer_grad_norms[name].values.map(function (v) { return v || 0; })); };
        var top = layers.slice().sort(function (a, b) { return peak(b) - peak(a); }).slice(0, 16);
        lineChart(details, id + 'layer-grad-norms', 'gradient norm per parameter (the 16 largest; log scale)',
          top.map(function (name) { return { label: name, steps: c.layer_grad_norms[name].steps, values: c.layer_grad_norms[name].values }; }),
          { alerts: run.alerts, log: true, height: 300 });
      });
    }
  }

  function renderHeatmaps(section, run, id) {
    add(section, el('h3', '', 'Value distributions: log2 |x| per step'));
    if (run.heatmaps.length) {
      add(section, el('p', 'meta', 'Each column is one traced step; shade is the share of the tensor\'s values in that binade; the black line is max |x|. Sites with alerts and the least headroom first.'));
      var hgrid = add(section, el('div', 'grid'));
      run.heatmaps.forEach(function (map, i) { heatmap(hgrid, id + 'heatmap-' + i, map, run.precision); });
    } else {
      add(section, el('p', 'note', 'no tensor histograms recorded'));
    }
  }

  function renderLocalization(section, run) {
    add(section, el('h3', '', 'Anomaly localization'));
    if (!run.localization.length) {
      add(section, el('p', 'note', 'no alert in this run'));
    } else {
      table(section, [
        { title: 'alert', key: 'type', cls: function (r) { return 'sev-' + r.severity; } },
        { title: 'severity', key: 'severity' },
        { title: 'first step', key: 'step', num: true },
        { title: 'site', key: 'site', mono: true },
        { title: 'function', key: 'function', mono: true },
        { title: 'what', key: 'what' },
        { title: 'value', key: 'value', num: true },
        { title: 'limit', key: 'threshold', num: true }
      ], run.localization);
      var steps = [];
      run.localization.forEach(function (a) { if (steps.indexOf(a.step) < 0) steps.push(a.step); });
      steps.forEach(function (step, i) {
        var chain = run.chains[String(step)] || [];
        var details = add(section, el('details'));
        if (i === 0) details.open = true;
        add(details, el('summary', '', 'Step ' + step + ': every observed tensor in execution order (' + chain.length + '); the first bad one is highlighted'));
        table(details, [
          { title: 'seq', key: 'seq', num: true },
          { title: 'what', key: 'what' },
          { title: 'site', key: 'site', mono: true },
          { title: 'function', key: 'function', mono: true },
          { title: 'max |x|', key: 'max_abs', num: true },
          { title: 'NaN', key: 'nan_count', num: true },
          { title: 'Inf', key: 'inf_count', num: true },
          { title: run.precision === 'BF16' ? 'over bf16' : 'over fp16', value: function (r) { return run.precision === 'BF16' ? r.bf16_overflow : r.fp16_overflow; }, num: true }
        ], chain, function (r) { return r.first_bad ? 'first-bad' : (r.bad ? 'bad' : ''); });
      });
    }
  }

  function renderVerdicts(section, run) {
    add(section, el('h3', '', 'Verification of static findings'));
    if (run.verdicts === null || run.verdicts === undefined) {
      add(section, el('p', 'note', 'no verification data in this run (train with MPNANNY_VERIFY=1 and a sites file from mpnanny-check --export-sites)'));
    } else if (!run.verdicts.length) {
      add(section, el('p', 'note', 'no sites were verified in this run'));
    } else {
      table(section, [
        { title: 'verdict', key: 'verdict', cls: function (r) { return 'v-' + r.verdict; } },
        { title: 'check', key: 'check_name' },
        { title: 'source line', value: function (r) { return (r.file || '?') + ':' + (r.line || '?'); }, mono: true },
        { title: 'function', key: 'function', mono: true },
        { title: 'steps', key: 'steps_observed', num: true },
        { title: 'headroom', key: 'worst_headroom', num: true },
        { title: 'first step', key: 'first_step', num: true },
        { title: 'evidence', key: 'evidence' }
      ], run.verdicts);
    }
  }

  function renderAlerts(section, run) {
    add(section, el('h3', '', 'Alerts' + (run.alerts.length < run.alerts_total ? ' (first ' + run.alerts.length + ' of ' + run.alerts_total + ')' : '')));
    if (!run.alerts.length) {
      add(section, el('p', 'note', 'no alerts'));
    } else {
      var shown = run.alerts.slice(0, 300);
      var alertsBox = run.alerts.length > 20 ? add(section, el('details')) : section;
      if (alertsBox !== section) add(alertsBox, el('summary', '', 'show ' + shown.length + ' alerts'));
      table(alertsBox, [
        { title: 'step', key: 'step', num: true },
        { title: 'severity', key: 'severity', cls: function (r) { return 'sev-' + r.severity; } },
        { title: 'type', key: 'type' },
        { title: 'site', key: 'site', mono: true },
        { title: 'function', key: 'function', mono: true },
        { title: 'what', key: 'what' },
        { title: 'value', key: 'value', num: true },
        { title: 'limit', key: 'threshold', num: true },
        { title: 'message', key: 'message' }
      ], shown);
    }
  }

  // The ranks of a data-parallel run on one step axis: a lane per rank from its first to its last
  // step, its alerts as marks (coloured by the worst severity at that step), the origin ringed,
  // and a cross where a rank stopped early. A failure that spread through the all-reduce shows as
  // marks on every lane at one step; the ring says which lane it came from.
  function renderRanks(ranks) {
    var section = add(main, el('section', 'block'));
    section.setAttribute('data-ranks', String(ranks.lanes.length));
    add(section, el('h2', '', 'Ranks: ' + ranks.lanes.length + ' of world size ' + ranks.world_size));
    var origin = ranks.origin;
    var box = add(section, el('div', 'departure' + (origin ? '' : ' none')));
    box.setAttribute('data-origin-step', origin ? String(origin.step) : '');
    box.textContent = origin ? 'Origin: ' + origin.text + '.' : 'No rank\'s gradient held a NaN, Inf or overflow before the all-reduce.';
    var stoppedRanks = {};
    ranks.stopped.forEach(function (s) {
      stoppedRanks[s.rank] = s;
      add(section, el('p', 'stopped', s.text)).setAttribute('data-stopped-rank', String(s.rank));
    });
    var originRanks = {};
    if (origin) origin.ranks.forEach(function (o) { originRanks[o.rank] = o; });

    var lanes = ranks.lanes, xs = {};
    lanes.forEach(function (lane) {
      if (lane.first_step !== null) { xs[lane.first_step] = true; xs[lane.last_step] = true; }
      lane.marks.forEach(function (m) { xs[m.step] = true; });
    });
    if (origin) xs[origin.step] = true;
    var x = Object.keys(xs).map(Number).sort(function (a, b) { return a - b; });
    var index = {};
    x.forEach(function (v, i) { index[v] = i; });
    // A lane is a series at y = its rank, defined at its first and last step only (spanGaps joins them).
    var columns = [x].concat(lanes.map(function (lane) {
      var column = x.map(function () { return null; });
      if (lane.first_step !== null) { column[index[lane.first_step]] = lane.rank; column[index[lane.last_step]] = lane.rank; }
      return column;
    }));
    var marks = 0;
    lanes.forEach(function (lane) { marks += lane.marks.length; });
    var chart = chartBox(section, 'rank-lanes', 'lanes', 'one lane per rank; marks: steps with alerts (red ERROR, orange WARNING); ring: the origin; cross: a rank that stopped early');
    chart.setAttribute('data-points', String(x.length));
    chart.setAttribute('data-lanes', String(lanes.length));
    chart.setAttribute('data-marks', String(marks));
    chart.setAttribute('data-origin-ranks', origin ? origin.ranks.map(function (o) { return o.rank; }).join(',') : '');
    var readout = add(chart, el('div', 'readout', ''));
    if (!x.length) { add(chart, el('p', 'note', 'no steps recorded')); return; }
    var maxRank = 0;
    lanes.forEach(function (lane) { maxRank = Math.max(maxRank, lane.rank); });
    ranks.stopped.forEach(function (s) { maxRank = Math.max(maxRank, s.rank); });
    function drawMarks(u) {
      var ctx = u.ctx, dpr = devicePixelRatio;
      ctx.save();
      lanes.forEach(function (lane) {
        var y = u.valToPos(lane.rank, 'y', true);
        lane.marks.forEach(function (m) {
          var px = u.valToPos(m.step, 'x', true);
          ctx.fillStyle = SEVERITY_COLOUR[m.severity] || '#999';
          ctx.beginPath(); ctx.arc(px, y, 4.5 * dpr, 0, 2 * Math.PI); ctx.fill();
        });
        if (stoppedRanks[lane.rank] && lane.last_step !== null) {
          var sx = u.valToPos(lane.last_step, 'x', true), r = 6 * dpr;
          ctx.strokeStyle = '#1d2330'; ctx.lineWidth = 2 * dpr;
          ctx.beginPath(); ctx.moveTo(sx - r, y - r); ctx.lineTo(sx + r, y + r); ctx.moveTo(sx - r, y + r); ctx.lineTo(sx + r, y - r); ctx.stroke();
        }
      });
      if (origin) {
        var ox = u.valToPos(origin.step, 'x', true);
        origin.ranks.forEach(function (o) {
          var oy = u.valToPos(o.rank, 'y', true);
          ctx.strokeStyle = SEVERITY_COLOUR.ERROR; ctx.lineWidth = 2.5 * dpr;
          ctx.beginPath(); ctx.arc(ox, oy, 10 * dpr, 0, 2 * Math.PI); ctx.stroke();
          ctx.textAlign = 'left'; ctx.textBaseline = 'bottom';
          ctx.fillStyle = SEVERITY_COLOUR.ERROR; ctx.font = (11 * dpr) + 'px sans-serif';
          ctx.fillText('origin', ox + 12 * dpr, oy - 6 * dpr);
        });
      }
      ctx.restore();
    }
    var opts = {
      width: chartWidth(), height: Math.max(140, 46 * (maxRank + 1) + 60),
      scales: { x: { time: false }, y: { auto: false, range: [-0.6, maxRank + 0.6] } },
      axes: [{ label: 'step', incrs: STEP_INCREMENTS },
             { label: 'rank', size: 60, incrs: [1], values: function (u, vals) { return vals.map(function (v) { return 'rank ' + v; }); } }],
      series: [{ label: 'step' }].concat(lanes.map(function (lane) {
        return { label: 'rank ' + lane.rank, stroke: originRanks[lane.rank] ? SEVERITY_COLOUR.ERROR : '#8a93a3', width: 3, spanGaps: true };
      })),
      legend: { show: false },
      hooks: {
        draw: [drawMarks],
        setCursor: [function (u) {
          var i = u.cursor.idx;
          if (i === null || i === undefined) { readout.textContent = ''; return; }
          var step = x[i], parts = [];
          lanes.forEach(function (lane) {
            lane.marks.forEach(function (m) { if (m.step === step) parts.push('rank ' + lane.rank + ': ' + m.count + ' ' + m.types.join(', ')); });
          });
          readout.textContent = 'step ' + step + (parts.length ? ': ' + parts.join('; ') : ': no alerts');
        }]
      }
    };
    new uPlot(opts, columns, chart);
    charts++;
  }

  function renderCompare(cmp) {
    var section = add(main, el('section', 'block'));
    section.setAttribute('data-compare', '1');
    add(section, el('h2', '', 'FP32 versus ' + cmp.low_format));
    add(section, el('p', 'meta', 'reference: ' + cmp.reference.file + ' (run ' + cmp.reference.run_id + ') · low precision: ' +
      cmp.low.file + ' (run ' + cmp.low.run_id + ') · ' + cmp.matched + ' matched tensors · tolerance ' + fmt(cmp.tolerance) +
      ' (relative, denominator floor ' + fmt(cmp.floor) + ')'));
    var d = cmp.departure;
    var box = add(section, el('div', 'departure' + (d ? '' : ' none')));
    box.setAttribute('data-departure-step', d ? String(d.step) : '');
    box.textContent = d
      ? 'The runs depart at step ' + d.step + ' at ' + d.site + (d.function ? ' in ' + d.function : '') + ' (' + d.what + '): ' +
        d.stat + ' ' + fmt(d.reference) + ' in fp32 versus ' + fmt(d.low) + ' (relative difference ' + fmt(d.relative) + ').'
      : 'No tensor departs beyond the tolerance: the low-precision run follows the fp32 run.';
    var rows = cmp.rows;
    var singleStep = rows.every(function (r) { return r.steps.length <= 1; });
    var grid = add(section, el('div', 'grid'));
    var tolLine = horizontalLine(cmp.tolerance, '#d62728', 'tolerance ' + fmt(cmp.tolerance));
    if (singleStep) {
      var ordered = rows.filter(function (r) { return r.phase !== 'scalar'; }).sort(function (a, b) { return a.first_seq - b.first_seq; });
      var xs = ordered.map(function (r, i) { return i; });
      lineChart(grid, 'compare-by-site', 'relative difference of max |x| and norm per tensor, in execution order (log scale)',
        [{ label: 'relative difference', steps: xs, values: ordered.map(function (r) { return Math.max(r.rel_max_abs[0] || 0, r.rel_norm[0] || 0); }) }],
        { log: true, points: true, xLabel: 'tensor (execution order)', lines: [tolLine] });
    } else {
      var top = rows.filter(function (r) { return r.phase !== 'scalar'; }).slice(0, 8);
      lineChart(grid, 'compare-over-steps', 'relative difference per step (max of max |x| and norm), the first ' + top.length + ' tensors to depart (log scale)',
        top.map(function (r) {
          return { label: r.what + ' @ ' + r.site, steps: r.steps, values: r.steps.map(function (s, i) { return Math.max(r.rel_max_abs[i] || 0, r.rel_norm[i] || 0); }) };
        }), { log: true, lines: [tolLine], height: 300 });
      var scalars = rows.filter(function (r) { return r.phase === 'scalar'; });
      if (scalars.length) {
        lineChart(grid, 'compare-scalars', 'relative difference of scalars (log scale)',
          scalars.map(function (r) { return { label: r.name, steps: r.steps, values: r.rel_max_abs }; }), { log: true, lines: [tolLine] });
      }
    }
    table(section, [
      { title: 'departs at', key: 'departure_step', num: true },
      { title: 'max rel. diff', key: 'max_relative', num: true },
      { title: 'what', key: 'what' },
      { title: 'site', key: 'site', mono: true },
      { title: 'function', key: 'function', mono: true },
      { title: 'steps', value: function (r) { return r.steps.length; }, num: true }
    ], rows.slice(0, 400), function (r) { return r === rows[0] && r.departs ? 'first-bad' : (r.departs ? 'bad' : ''); });
  }

  try {
    var title = document.getElementById('subtitle');
    if (data.compare) {
      title.textContent = 'Precision comparison';
      renderCompare(data.compare);
    } else {
      title.textContent = data.runs.length + (data.runs.length === 1 ? ' database' : ' databases (one per rank)');
      if (data.ranks) renderRanks(data.ranks);
      data.runs.forEach(function (run) { renderRun(run, data.runs.length > 1); });
    }
  } catch (e) {
    errors.push(String(e && e.stack ? e.stack : e));
  }
  // uPlot draws in a microtask; let it finish (and report any error) before signing off.
  setTimeout(function () {
    document.body.setAttribute('data-charts', String(charts));
    document.body.setAttribute('data-errors', String(errors.length));
    if (errors.length) {
      var pre = add(document.body, el('pre', 'errors', errors.join('\n')));
      pre.id = 'errors';
    }
    document.body.setAttribute('data-rendered', '1');
  }, 30);
})();
