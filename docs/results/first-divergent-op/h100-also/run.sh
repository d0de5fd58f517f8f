div() {
  local P="--model prednet --data moving-mnist --canvas 32 --prednet-stacks 1,8,16,32 --prednet-loss pixel_mse --nt 10 --batch-size 4 --lr 3e-3 --steps 4 --eval-sequences 8 --threads 1"
  for n in a b; do timeout 60 $S train $P --device cuda --probe ophash --out runs/div/$n > runs/div-$n.log 2>&1 || log "train $n failed"; done
  one() { ls -d runs/div/$1/runs/*/ | head -1; }
  timeout 60 $S diverge $(one a) $(one b) --json runs/div/a-b.json > runs/div/a-b.txt 2>&1; log "diverge: $(tail -3 runs/div/a-b.txt)"
  tar cJf $OUT/runs.tar.xz --exclude="*.npy" --exclude="checkpoint*" --exclude="snapshots" runs/ms runs/div runs/div-*.log
}
