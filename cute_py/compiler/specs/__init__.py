"""What a compile is specialised on and checked against: argument specs, annotations, options, host scalars, launch limits."""
