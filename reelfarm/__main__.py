from reelfarm.cli import main

main()
