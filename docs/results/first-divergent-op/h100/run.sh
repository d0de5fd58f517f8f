  ( P="--model prednet --data moving-mnist --canvas 32 --prednet-stacks 1,8,16,32 --prednet-loss pixel_mse --nt 10 --batch-size 4 --lr 3e-3 --steps 4 --eval-sequences 8 --threads 1"
    for r in "a --device cuda --probe ophash" "b --device cuda --probe ophash" "det --device cuda --deterministic strict --cudnn-deterministic true --probe ophash" "cpu --probe ophash" "cpu2 --probe ophash" "fused --device cuda --kernels fused --probe ophash" "ra --device cuda" "rb --device cuda"; do
      set -- $r; n=$1; shift
      $S train $P "$@" --out runs/div/$n > runs/div-$n.log 2>&1 || { echo "train $n failed"; tail -3 runs/div-$n.log; }
    done
    one() { ls -d runs/div/$1/runs/*/ | head -1; }
    for p in "a b" "a det" "det cpu" "cpu cpu2" "a fused" "ra rb"; do set -- $p; echo "== diverge $1 $2"; $S diverge $(one $1) $(one $2) --json runs/div/$1-$2.json --replay-dir runs/div/replay-$1-$2 | tail -4; done ) > $OUT/diverge.txt 2>&1
