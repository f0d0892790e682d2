package frame_test

import (
	"fmt"
	"strings"

	"github.com/groundgate/groundgate/execution/frame"
)

func ExampleLoad() {
	src := "Date;Price\r\n4/17/2020;18.27\r\n4/20/2020;-36.98\r\n4/21/2020;NA\r\n"
	f, err := frame.Load(strings.NewReader(src), "wti.csv")
	if err != nil {
		panic(err)
	}
	price, _ := f.Lookup("Price")
	fmt.Println(f.Dates(), price)

	_, err = frame.Load(strings.NewReader("Date,Price\n2020-04-17,18.27\n2020-04-17,x\n"), "wti.csv")
	fmt.Println(err)
	// Output:
	// [2020-04-17 2020-04-20 2020-04-21] [18.27 -36.98 NaN]
	// wti.csv: line 3, column 1 "Date": duplicate date: 2020-04-17 repeats line 2
}
